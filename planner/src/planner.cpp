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
#include "marionette/planner/plan_quality.hpp"
#include "plan_verification.hpp"

namespace marionette {

void checkPlannerOptions(const PlannerOptions& opt) {
  if (!findPlanner(opt.planner))
    throw FieldError("options.planner",
                     "unknown '" + opt.planner + "' (expected " + joinNames(plannerNames()) + ")");
  if (!(opt.time_limit_s > 0.0) || !std::isfinite(opt.time_limit_s))
    throw FieldError("options.time_limit_s", "must be > 0 s");
  if (!(opt.max_propagations >= 0 && opt.max_propagations <= 10'000'000'000L))
    throw FieldError("options.max_propagations",
                     "must be within [0, 1e10], got " + std::to_string(opt.max_propagations));
  if (!(opt.rate_hz >= 1.0 && opt.rate_hz <= 1000.0))
    throw FieldError("options.rate_hz",
                     "must be within [1, 1000] Hz, got " + formatNumber(opt.rate_hz));
  if (!(opt.step_s >= 1e-3 && opt.step_s <= 0.1))
    throw FieldError("options.step_s",
                     "must be within [0.001, 0.1] s, got " + formatNumber(opt.step_s));
  checkPlannerParameters(opt.planner, opt.params);
}

Plan planMotion(const PlanRequest& req, const ProgressFn& progress, const CancelFn& cancelled) {
  const auto t0 = SteadyClock::now();
  const CancelScope scope(cancelled);  // reaches the rest poses and re-simulations below
  if (!req.model) throw FieldError("model", "none given");
  const Model& model = *req.model;
  const PlannerOptions& opt = req.options;
  checkPlannerOptions(opt);
  const PlannerInfo planner = *findPlanner(opt.planner);

  CollisionModelPtr collision = req.collision;
  if (!collision) {
    ScenePtr scene = req.scene ? req.scene : loadScene("empty");
    collision = std::make_shared<CollisionModel>(req.model, scene);
  }
  Eigen::VectorXd rho0 = req.start_inputs.size() ? req.start_inputs : model.defaultInputs();
  if (rho0.size() != model.nk())
    throw FieldError("start_inputs", "expected " + std::to_string(model.nk()) + " values, got " +
                                         std::to_string(rho0.size()));
  for (int i = 0; i < model.nk(); ++i) {
    const KinematicVariable& kv = model.kinematic[i];
    if (!std::isfinite(rho0[i]) || rho0[i] < kv.lower || rho0[i] > kv.upper)
      throw FieldError("start_inputs" + fieldKey(kv.name),
                       kv.name + " = " + std::to_string(rho0[i]) + " is outside its range");
  }
  GoalEvaluator goal(req.model, req.goal);  // checks the goal's names before any search
  const StartState start = resolveStart(req.model, rho0, req.start);
  {
    CollisionChecker checker(collision);
    const CollisionResult c = checker.inCollision(model.configuration(start.q, rho0));
    if (c.in_collision) throw FieldError("start", "in collision (" + c.pair.describe() + ")");
  }

  Plan plan;
  plan.model = model.name;
  plan.scene = collision->scene().name;
  plan.goal = req.goal.describe();
  plan.start = req.start_text;
  plan.seed = opt.seed;
  plan.rate_hz = opt.rate_hz;
  plan.input_names = itemNames(model.kinematic);
  plan.state_names = itemNames(model.dynamic);
  plan.string_names = itemNames(model.strings);

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
  verified.inputs = found.inputs.resample(opt.rate_hz);
  try {
    detail::verifyPlan(req, collision, verified);
  } catch (const SimulationError& e) {
    // Nothing usable: no inputs, and none of the half-filled prediction.
    plan.outcome = PlanOutcome::NotFound;
    plan.message = std::string("the re-simulation of the plan failed: ") + e.what();
    plan.stats.total_time_s = secondsSince(t0);
    return plan;
  }
  plan = std::move(verified);
  plan.stats.verification_time_s = secondsSince(tv);
  detail::classifyPlan(req.goal, plan);
  try {
    measurePlanQuality(req, plan);
  } catch (const SimulationError&) {
    plan.quality = PlanQuality{};  // the hold after the end failed a step: not measured
  }
  plan.stats.total_time_s = secondsSince(t0);
  requireFiniteNumbers(plan);
  return plan;
}

Plan verifyMotion(const PlanRequest& req, const Eigen::MatrixXd& inputs, double rate_hz) {
  const auto t0 = SteadyClock::now();
  if (!req.model) throw FieldError("model", "none given");
  const Model& model = *req.model;
  if (inputs.rows() < 2 || inputs.cols() != model.nk())
    throw FieldError("inputs", "expected at least 2 rows of " + std::to_string(model.nk()) +
                                   " values, got " + std::to_string(inputs.rows()) + " x " +
                                   std::to_string(inputs.cols()));
  if (!(rate_hz >= 1.0 && rate_hz <= 1000.0))
    throw FieldError("options.rate_hz", "must be within [1, 1000] Hz, got " + formatNumber(rate_hz));
  CollisionModelPtr collision = req.collision;
  if (!collision) {
    ScenePtr scene = req.scene ? req.scene : loadScene("empty");
    collision = std::make_shared<CollisionModel>(req.model, scene);
  }
  GoalEvaluator goal(req.model, req.goal);  // names checked before anything runs
  Plan plan;
  plan.model = model.name;
  plan.scene = collision->scene().name;
  plan.goal = req.goal.describe();
  plan.start = req.start_text;
  plan.rate_hz = rate_hz;
  plan.input_names = itemNames(model.kinematic);
  plan.state_names = itemNames(model.dynamic);
  plan.string_names = itemNames(model.strings);
  plan.stats.planner = "given";
  Plan verified = plan;
  verified.inputs = inputs;
  try {
    detail::verifyPlan(req, collision, verified);
  } catch (const SimulationError& e) {
    plan.outcome = PlanOutcome::NotFound;
    plan.message = std::string("the re-simulation of the inputs failed: ") + e.what();
    return plan;
  }
  plan = std::move(verified);
  detail::classifyPlan(req.goal, plan);
  try {
    measurePlanQuality(req, plan);
  } catch (const SimulationError&) {
    plan.quality = PlanQuality{};
  }
  plan.stats.verification_time_s = plan.stats.total_time_s = secondsSince(t0);
  requireFiniteNumbers(plan);
  return plan;
}

}  // namespace marionette
