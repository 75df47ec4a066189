// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/planner/pipeline.hpp"

#include "marionette/models/field_error.hpp"
#include "marionette/models/simulation.hpp"

namespace marionette {

PipelineResult runPipeline(const PlanRequest& request, const PipelineOptions& options,
                           const ProgressFn& progress, const CancelFn& cancelled) {
  if (options.optimization) checkOptimizationOptions(*options.optimization);
  if (options.gains) control::checkLqrWeights(*options.gains);
  PipelineResult out;
  out.plan = planMotion(request, progress, cancelled);
  // An approximate plan too: the optimizer replaces it by any verified motion that reaches the
  // goal.
  if (options.optimization && optimizable(out.plan))
    out.optimized = optimizePlan(request, out.plan, *options.optimization, progress, cancelled);
  if (!options.gains) return out;
  Plan& plan = out.optimized ? out.optimized->plan : out.plan;
  if (plan.samples() < 2 || plan.predicted.states.rows() != plan.samples()) {
    out.no_gains = "no plan";
    return out;
  }
  try {
    plan.gains = control::planTrackingGains(request.model, plan.inputs,
                                            plan.predicted.states.row(0).transpose(), plan.rate_hz,
                                            *options.gains);
  } catch (const SimulationError& e) {  // a step the linearization cannot take
    out.no_gains = e.what();
  } catch (const FieldError& e) {  // a plan too long for them
    out.no_gains = e.problem();
  }
  return out;
}

}  // namespace marionette
