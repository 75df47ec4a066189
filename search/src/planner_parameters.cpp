// SPDX-License-Identifier: BSD-3-Clause
#include "planner_parameters.hpp"

#include <cmath>
#include <vector>

#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"

namespace marionette::detail {
namespace {

struct ParameterRange {
  double lower, upper;
  bool lower_open;  // (lower, upper] rather than [lower, upper]
  bool whole;       // a whole number (0/1 for a flag)
};

const std::map<std::string, ParameterRange>& parameterRanges() {
  static const std::map<std::string, ParameterRange> ranges = {
      {"goal_bias", {0, 1, false, false}},
      {"intermediate_states", {0, 1, false, true}},
      {"border_fraction", {0, 1, true, false}},
      {"bad_score_factor", {0, 1, true, false}},
      {"good_score_factor", {0, 1, true, false}},
      {"max_close_samples", {1, 1e6, false, true}},
      {"range", {0, 1e4, false, false}},
      {"pruning_radius", {0, 100, false, false}},
      {"selection_radius", {0, 100, false, false}},
  };
  return ranges;
}

// "" when `value` is one a parameter may take, else what it must be.
std::string parameterProblem(const std::string& key, const std::string& value) {
  const auto it = parameterRanges().find(key);
  if (it == parameterRanges().end()) return {};
  const ParameterRange& r = it->second;
  double x = 0.0;
  const bool number = parseFiniteNumber(value, x);
  const bool fits = number && (r.lower_open ? x > r.lower : x >= r.lower) && x <= r.upper &&
                    (!r.whole || x == std::floor(x));
  if (fits) return {};
  return std::string("must be ") + (r.whole ? "a whole number" : "a number") + " in " +
         (r.lower_open ? "(" : "[") + formatNumber(r.lower) + ", " + formatNumber(r.upper) +
         "] (got '" + value.substr(0, 40) + (value.size() > 40 ? "...'" : "'") + ")";
}

}  // namespace

void applyParameters(ompl::base::Planner& planner, const std::string& name,
                     const std::map<std::string, std::string>& params) {
  for (const auto& [key, value] : params) {
    const std::string field = "options.parameters" + fieldKey(key);
    if (!planner.params().hasParam(key)) {
      std::map<std::string, std::string> known;
      planner.params().getParams(known);
      std::vector<std::string> names;
      for (const auto& kv : known) names.push_back(kv.first);
      throw FieldError(field, "planner '" + name + "' has no parameter '" + key +
                                  "' (it has: " + joinNames(names) + ")");
    }
    if (const std::string problem = parameterProblem(key, value); !problem.empty())
      throw FieldError(field, "planner '" + name + "': " + key + " " + problem);
    bool set = false;
    try {
      set = planner.params().setParam(key, value);
    } catch (const std::exception&) {
    }
    if (!set)
      throw FieldError(field, "planner '" + name + "': " + key + " cannot be '" + value + "'");
  }
}

}  // namespace marionette::detail
