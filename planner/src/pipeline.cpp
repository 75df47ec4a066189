// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/planner/pipeline.hpp"

#include "marionette/common/clock.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/simulation.hpp"

namespace marionette {

PipelineResult runPipeline(const PlanRequest& request, const PipelineOptions& options,
                           const ProgressFn& progress, const CancelFn& cancelled) {
  if (options.optimization) checkOptimizationOptions(*options.optimization);
  if (options.gains) control::checkLqrWeights(*options.gains);
  PipelineResult out;
  const auto t0 = SteadyClock::now();
  // An approximate plan too: the optimizer replaces it by any verified motion that reaches the
  // goal.  Its progress is timed, as the search's, from the request's start.
  const auto searchAndOptimize = [&](const PlanRequest& searched) {
    out.plan = planMotion(searched, progress, cancelled);
    out.optimized.reset();
    if (!options.optimization || !optimizable(out.plan)) return;
    const double offset_s = secondsSince(t0);
    ProgressFn optimizing;
    if (progress)
      optimizing = [&progress, offset_s](const PlanProgress& p) {
        PlanProgress from_start = p;
        from_start.elapsed_s += offset_s;
        progress(from_start);
      };
    out.optimized = optimizePlan(request, out.plan, *options.optimization, optimizing, cancelled);
  };
  if (!options.optimization || request.goal.kind != GoalSpec::Kind::RestOf) {
    searchAndOptimize(request);
  } else {
    // A rest-of goal's search ends where the optimizer can take over: at the goal's inputs,
    // the puppet near its rest pose there.  Where the optimizer cannot finish from that, the
    // search goes on to the whole goal, as it does unoptimized.
    PlanRequest handed = request;
    handed.options.hand_off_to_optimizer = true;
    searchAndOptimize(handed);
    if (out.result().outcome != PlanOutcome::Exact) {
      const std::string first =
          "the search first ended at the goal's inputs (" +
          std::to_string(out.plan.stats.propagations) +
          " propagations), and optimizing that did not reach the goal (" +
          (out.optimized ? out.optimized->report.message : out.plan.message) +
          "); then it searched for the whole goal";
      searchAndOptimize(request);
      if (out.optimized) {
        std::string& m = out.optimized->report.message;
        m = m.empty() ? first : first + "; " + m;
      }
    }
  }
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
