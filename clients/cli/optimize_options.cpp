// SPDX-License-Identifier: BSD-3-Clause
#include "optimize_options.hpp"

#include "marionette/common/text.hpp"

namespace marionette::cli {

void parseWeightFlags(const Args& a, OptimizationWeights& weights) {
  if (!a.all.count("--weight")) return;
  for (const std::string& item : a.all.at("--weight")) {
    std::string name, value;
    if (!splitNameValue(item, name, value))
      throw std::invalid_argument("--weight: expected NAME=VALUE, got '" + item + "'");
    double* w = weights.byName(name);
    if (!w)
      throw std::invalid_argument("--weight: unknown weight '" + name + "' (" +
                                  joinNames(OptimizationWeights::names()) + ")");
    *w = parseNumber("--weight " + name, value);
  }
}

OptimizationOptions parseOptimizationOptions(const Args& a) {
  OptimizationOptions o;
  if (a.values.count("--optimizer") &&
      (a.values.at("--optimizer").empty() ||
       !parseOptimizer(a.values.at("--optimizer"), o)))
    throw std::invalid_argument(
        "--optimizer: expected transcription, interior-point or ipopt, got '" +
                                a.values.at("--optimizer") + "'");
  if (a.values.count("--settle")) o.settle_s = parseNumber("--settle", a.values.at("--settle"));
  if (a.values.count("--margin")) o.margin_m = parseNumber("--margin", a.values.at("--margin"));
  if (a.values.count("--optimize-time"))
    o.time_limit_s = parseNumber("--optimize-time", a.values.at("--optimize-time"));
  if (a.values.count("--optimize-iterations"))
    o.max_iterations = static_cast<int>(
        wholeNumber("--optimize-iterations", a.values.at("--optimize-iterations"), 1, 10000));
  parseWeightFlags(a, o.weights);
  checkOptimizationOptions(o);  // FieldError: the caller words it as the flag
  return o;
}

bool optimizeUnlessRaw(const Args& a) {
  if (!a.switches.count("--raw")) return true;
  for (const char* flag :
       {"--optimize", "--settle", "--optimize-time", "--optimize-iterations", "--optimizer",
        "--weight", "--margin"})
    if (a.values.count(flag) || a.all.count(flag) || a.switches.count(flag))
      throw std::invalid_argument(std::string(flag) +
                                  ": not with --raw (the plan as found is not optimized)");
  return false;
}

void printOptimization(const OptimizationReport& r, std::ostream& os) {
  if (r.method.empty()) {  // (returned before a method ran: no motion, too long)
    os << "  not optimized: " << r.message << '\n';
    return;
  }
  os << "  optimized (" << r.method << "): " << r.iterations << " iterations, "
     << formatted("%.2f s", r.time_s);
  // An improved plan's report still says what cut the solve short (a deadline set).
  if (!r.improved)
    os << "; unchanged: " << r.message;
  else if (!r.message.empty())
    os << "; " << r.message;
  os << '\n';
}

}  // namespace marionette::cli
