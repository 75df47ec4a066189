// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/trajopt/trajectory_optimization.hpp"

namespace marionette {

const std::vector<std::string>& OptimizationWeights::names() {
  static const std::vector<std::string> kNames = {"effort", "jerk",  "swing",    "settle",
                                                  "tension_rate", "slack", "duration", "clearance",
                                                  "tracking"};
  return kNames;
}

namespace {
// The member named `name` of a weights or cost object (the two share their names).
template <class Terms>
double* memberByName(Terms& t, const std::string& name) {
  if (name == "effort") return &t.effort;
  if (name == "jerk") return &t.jerk;
  if (name == "swing") return &t.swing;
  if (name == "settle") return &t.settle;
  if (name == "tension_rate") return &t.tension_rate;
  if (name == "slack") return &t.slack;
  if (name == "duration") return &t.duration;
  if (name == "clearance") return &t.clearance;
  if (name == "tracking") return &t.tracking;
  return nullptr;
}
}  // namespace

double* OptimizationWeights::byName(const std::string& name) { return memberByName(*this, name); }
double* OptimizationCost::byName(const std::string& name) { return memberByName(*this, name); }

std::vector<std::pair<std::string, double>> OptimizationCost::terms() const {
  OptimizationCost copy = *this;
  std::vector<std::pair<std::string, double>> out;
  for (const std::string& name : OptimizationWeights::names())
    out.emplace_back(name, *copy.byName(name));
  return out;
}

}  // namespace marionette
