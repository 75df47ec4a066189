#include "marionette/planner/trajectory_optimization.hpp"

namespace marionette {

const std::vector<std::string>& OptimizationWeights::names() {
  static const std::vector<std::string> kNames = {"effort", "jerk",  "swing",   "settle",
                                                  "tension_rate", "slack", "duration", "clearance"};
  return kNames;
}

double* OptimizationWeights::byName(const std::string& name) {
  if (name == "effort") return &effort;
  if (name == "jerk") return &jerk;
  if (name == "swing") return &swing;
  if (name == "settle") return &settle;
  if (name == "tension_rate") return &tension_rate;
  if (name == "slack") return &slack;
  if (name == "duration") return &duration;
  if (name == "clearance") return &clearance;
  return nullptr;
}

}  // namespace marionette
