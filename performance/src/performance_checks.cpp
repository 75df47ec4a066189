// SPDX-License-Identifier: BSD-3-Clause
// What planPerformance checks before any work (plan_performance.hpp): the options' ranges and the
// targets' names and size, each error naming its field.
#include <string>

#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/performance/plan_performance.hpp"

namespace marionette {

void checkPerformanceOptions(const Model& model, const PerformanceOptions& o) {
  auto within = [](const char* field, double v, double lo, double hi, const char* unit) {
    if (!(v >= lo && v <= hi))
      throw FieldError(field, "must be in [" + formatNumber(lo) + ", " + formatNumber(hi) + "] " +
                                  unit + ", got " + formatNumber(v));
  };
  within("options.rate_hz", o.rate_hz, 10, 1000, "Hz");
  within("options.key_rate_hz", o.key_rate_hz, 1, o.rate_hz, "Hz (at most rate_hz)");
  within("options.margin_m", o.margin_m, 0, 1, "m");
  within("options.tolerance_m", o.tolerance_m, 1e-4, 1, "m");
  within("options.reach_tolerance_m", o.reach_tolerance_m, 0, 1, "m");
  within("options.settle_s", o.settle_s, 0, 10, "s");
  within("options.knots_per_s", o.knots_per_s, 0.5, 50, "per s");
  if (o.time_limit_s != 0.0)  // 0: no deadline
    within("options.time_limit_s", o.time_limit_s, 0.1, 3600, "s (or 0: no deadline)");
  for (std::size_t i = 0; i < o.disable.size(); ++i)
    if (o.disable[i] < 0 || o.disable[i] >= model.nk())
      throw FieldError("options.disable[" + std::to_string(i) + "]", "not an input");
  within("options.calm_weight", o.calm_weight, 0, 100, "(of a target's weight)");
  for (std::size_t i = 0; i < o.free_points.size(); ++i)
    if (model.pointIndex(o.free_points[i]) < 0)
      throw FieldError("options.free_points[" + std::to_string(i) + "]",
                       "model " + model.name + " has no point '" + o.free_points[i] + "'");
  OptimizationOptions check;
  check.weights = o.weights;
  checkOptimizationOptions(check);
  OptimizationWeights given = o.weights, plans;
  if (given.settle != plans.settle)
    throw FieldError("optimization.weights" + fieldKey("settle"),
                     "settle: the performance's dynamics step has no such term (it weighs "
                     "effort, jerk, swing, tension_rate, complementarity and tracking)");
}

void checkPerformanceTargets(const Model& m, const TargetMotion& targets,
                             const PerformanceOptions& o) {
  for (std::size_t i = 0; i < targets.points.size(); ++i)
    if (m.pointIndex(targets.points[i]) < 0)
      throw FieldError("targets.points[" + std::to_string(i) + "]",
                       "model " + m.name + " has no point '" + targets.points[i] + "'");
  for (std::size_t i = 0; i < targets.variables.size(); ++i)
    if (m.variableIndex(targets.variables[i]) < 0)
      throw FieldError("targets.variables[" + std::to_string(i) + "]",
                       "model " + m.name + " has no variable '" + targets.variables[i] + "'");
  if (targets.frames() < 2 || !(targets.duration_s() >= 2.0 / o.rate_hz))
    throw FieldError("targets", "needs a motion of at least two samples");
  if (targets.duration_s() > kMaxPerformance_s)
    throw FieldError("targets", formatNumber(targets.duration_s()) + " s long; at most " +
                                    formatNumber(kMaxPerformance_s) + " s");
  const double samples = targets.duration_s() * o.rate_hz;
  if (samples > kMaxPerformanceSamples)
    throw FieldError("targets", formatNumber(targets.duration_s()) + " s at " +
                                    formatNumber(o.rate_hz) + " Hz are " +
                                    formatNumber(samples, 6) + " samples; at most " +
                                    formatNumber(kMaxPerformanceSamples));
}

}  // namespace marionette
