// SPDX-License-Identifier: BSD-3-Clause
// planMotion: validate the request, run the motion search the planner table names, resample
// what it found at the output rate and verify it by the checked simulation.
#include "marionette/planner/planner.hpp"

#include <cmath>
#include <sstream>

#include "marionette/common/clock.hpp"
#include "marionette/common/text.hpp"
#include "marionette/environments/checked_simulation.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/input_limits.hpp"
#include "motion_search.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "marionette/problem/verification.hpp"

namespace marionette {

void checkPlannerOptions(const PlannerOptions& opt) {
  if (!findPlanner(opt.planner))
    throw FieldError("options.planner",
                     "unknown '" + opt.planner + "' (expected " + joinNames(plannerNames()) + ")");
  if (!(opt.time_limit_s >= 0.0) || !std::isfinite(opt.time_limit_s))
    throw FieldError("options.time_limit_s", "must be >= 0 s (0: no deadline)");
  if (!(opt.max_propagations >= 0 && opt.max_propagations <= 10'000'000'000L))
    throw FieldError("options.max_propagations",
                     "must be within [0, 1e10], got " + std::to_string(opt.max_propagations));
  if (!(opt.output_rate_hz >= 1.0 && opt.output_rate_hz <= 1000.0))
    throw FieldError("options.output_rate_hz",
                     "must be within [1, 1000] Hz, got " + formatNumber(opt.output_rate_hz));
  if (!(opt.step_s >= 1e-3 && opt.step_s <= 0.1))
    throw FieldError("options.step_s",
                     "must be within [0.001, 0.1] s, got " + formatNumber(opt.step_s));
  checkPlannerParameters(opt.planner, opt.parameters);
}

long defaultPropagationBudget(const Model& model) {
  return kSearchWork / std::max(1, model.nd());
}

TreeSearchSettings treeSearchSettings(const PlannerOptions& options) {
  const std::optional<PlannerInfo> info = findPlanner(options.planner);
  if (!info) throw FieldError("options.planner", "unknown '" + options.planner + "'");
  TreeSearchSettings s;
  if (options.min_control_steps > 0) s.min_control_steps = options.min_control_steps;
  s.max_control_steps =
      std::max(s.min_control_steps,
               options.max_control_steps > 0 ? options.max_control_steps : info->max_control_steps);
  s.point_cell_m = info->point_cell_m;
  return s;
}

Plan planMotion(const PlanRequest& req, const ProgressFn& progress, const CancelFn& cancelled) {
  const auto t0 = SteadyClock::now();
  const CancelScope scope(cancelled);  // reaches the rest poses and re-simulations below
  if (!req.model) throw FieldError("model", "none given");
  const PlannerOptions& opt = req.options;
  checkPlannerOptions(opt);
  const PlannerInfo planner = *findPlanner(opt.planner);
  const ResolvedProblem resolved = resolveProblem(req);
  const CollisionModelPtr& collision = resolved.collision;
  const Eigen::VectorXd& rho0 = resolved.rho0;
  const StartState& start = resolved.start;
  GoalEvaluator goal(req.model, req.goal);

  Plan plan = planHeader(req, *collision, opt.output_rate_hz);
  plan.seed = opt.seed;

  const detail::SearchProblem problem{req, collision, start, rho0, goal, progress, cancelled};
  SearchResult found = detail::makeMotionSearch(planner)->search(problem);
  plan.stats = found.stats;
  plan.stats.planner = opt.planner;
  plan.message = found.message;
  if (!found.found) {
    plan.outcome = PlanOutcome::NotFound;
    plan.stats.total_time_s = secondsSince(t0);
    return plan;
  }
  // Whatever was found is not verified yet (that takes another re-simulation).
  if (cancelled && cancelled()) throw PlanCancelled("plan verification");
  // Resample at the output rate, re-simulate, re-check.
  const auto tv = SteadyClock::now();
  if (progress) {  // the search's final figures, as the plan's statistics will give them
    PlanProgress p;
    p.phase = "verify";
    p.elapsed_s = secondsSince(t0);
    p.propagations = found.stats.propagations;
    p.states = found.stats.tree_states ? found.stats.tree_states : found.stats.roadmap_vertices;
    p.best_goal_distance = found.stats.best_goal_distance;
    progress(p);
  }
  Plan verified = plan;
  verified.inputs = found.inputs.resample(opt.output_rate_hz);
  try {
    verifyPlan(req, collision, verified);
  } catch (const SimulationError& e) {
    // Nothing usable: no inputs, and none of the half-filled prediction.
    plan.outcome = PlanOutcome::NotFound;
    plan.message = std::string("the re-simulation of the plan failed: ") + e.what();
    plan.stats.total_time_s = secondsSince(t0);
    return plan;
  }
  plan = std::move(verified);
  plan.stats.verification_time_s = secondsSince(tv);
  classifyPlan(req.goal, plan);
  try {
    measurePlanQuality(req, *collision, plan);
  } catch (const SimulationError&) {
    plan.quality = PlanQuality{};  // the hold after the end failed a step: not measured
  }
  plan.stats.total_time_s = secondsSince(t0);
  requireFiniteNumbers(plan);
  return plan;
}

}  // namespace marionette
