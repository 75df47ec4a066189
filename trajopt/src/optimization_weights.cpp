// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/trajopt/trajectory_optimization.hpp"

namespace marionette {

const std::vector<std::string>& OptimizationWeights::names() {
  static const std::vector<std::string> kNames = {
      "effort", "jerk", "swing", "settle", "tension_rate", "complementarity", "tracking"};
  return kNames;
}

double* OptimizationWeights::byName(const std::string& name) {
  if (name == "effort") return &effort;
  if (name == "jerk") return &jerk;
  if (name == "swing") return &swing;
  if (name == "settle") return &settle;
  if (name == "tension_rate") return &tension_rate;
  if (name == "complementarity") return &complementarity;
  if (name == "tracking") return &tracking;
  return nullptr;
}

}  // namespace marionette
