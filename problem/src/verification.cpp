// SPDX-License-Identifier: BSD-3-Clause
// Verifying a plan: the re-simulation of exactly its inputs, every sample checked.
#include "marionette/problem/verification.hpp"

#include <sstream>

#include "marionette/environments/checked_simulation.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/input_limits.hpp"
#include "marionette/common/clock.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/problem/motion_problem.hpp"
#include "marionette/problem/plan_quality.hpp"

namespace marionette {

void verifyPlan(const MotionProblem& req, const CollisionModelPtr& collision, Plan& plan) {
  const Model& model = *req.model;
  const int n = plan.samples(), nd = model.nd(), ns = model.nstrings();
  const InputSchedule schedule = planInputs(plan);
  SimulationOptions so = planSimulation(plan);
  so.start = req.start;
  so.contacts = collision->contacts();  // what the checker lets it touch, the dynamics hold
  plan.predicted.states.resize(n, nd);
  plan.predicted.tensions_N.resize(n, ns);
  plan.predicted.clearance_m.resize(n);
  plan.predicted.stage_clearance_m.resize(n);
  plan.predicted.goal_distance.resize(n);
  plan.predicted.point_names.clear();
  for (const Point& p : model.points) plan.predicted.point_names.push_back(p.name);
  plan.predicted.points_m.resize(n, 3 * static_cast<Eigen::Index>(model.points.size()));
  // Every contact row's forces, kept for the rows that bore load once the run is over.
  const int nc = so.contacts ? so.contacts->rows() : 0;
  Eigen::MatrixXd normal_N = Eigen::MatrixXd::Zero(n, nc), friction_N = normal_N;
  DynamicsData kinematics(model);
  CollisionChecker checker(collision);
  GoalEvaluator goal(req.model, req.goal);
  Eigen::VectorXd q_prev, rho_prev, qdot(nd), rhodot(model.nk());
  plan.max_violation_m = 0.0;
  auto on_sample = [&](const CheckedSample& sample) {
    const int i = sample.index;
    if (i >= n) return false;
    const SimulationRow& row = sample.row;
    plan.predicted.states.row(i) = row.q->transpose();
    plan.predicted.tensions_N.row(i) = row.tension_N->transpose();
    plan.max_violation_m = std::max(plan.max_violation_m, row.max_violation_m);
    plan.predicted.clearance_m[i] = sample.clearance_m;
    plan.predicted.stage_clearance_m[i] = sample.stage_clearance_m;
    if (nc > 0 && row.contact_force_N) {
      normal_N.row(i) = row.contact_force_N->transpose();
      friction_N.row(i) = row.contact_friction_N->colwise().norm();
    }
    forwardKinematics(model, kinematics, model.configuration(*row.q, *row.rho));
    for (std::size_t p = 0; p < model.points.size(); ++p)
      plan.predicted.points_m.block<1, 3>(i, 3 * static_cast<Eigen::Index>(p)) =
          (model.stage_pose *
           pointPosition(kinematics, model.points[p].frame, model.points[p].position_m))
              .transpose();
    // Velocities of the step that ended here (the VI's own step velocity).
    if (i == 0) {
      qdot.setZero();
      rhodot.setZero();
    } else {
      qdot = (*row.q - q_prev) * plan.rate_hz;
      rhodot = (*row.rho - rho_prev) * plan.rate_hz;
    }
    q_prev = *row.q;
    rho_prev = *row.rho;
    const GoalEvaluator::Measure m = goal.measure(*row.q, *row.rho, qdot, rhodot);
    plan.predicted.goal_distance[i] = m.distance;
    plan.goal_distance_min = std::min(plan.goal_distance_min, m.distance);
    if (m.satisfied && plan.goal_sample < 0) plan.goal_sample = i;
    return true;
  };
  const CheckedSimulationReport report =
      simulateChecked(req.model, schedule, so, &checker, {}, on_sample);
  plan.predicted.contact_names.clear();
  std::vector<Eigen::Index> touched;
  for (int r = 0; r < nc; ++r)
    if (normal_N.col(r).maxCoeff() > 0.0) {
      touched.push_back(r);
      plan.predicted.contact_names.push_back(so.contacts->rowName(r));
    }
  plan.predicted.contact_normal_N = normal_N(Eigen::all, touched);
  plan.predicted.contact_friction_N = friction_N(Eigen::all, touched);
  plan.collision_free = report.first_collision < 0;
  plan.first_collision = report.first_collision;
  plan.collision_pair = report.first_collision < 0 ? "" : report.first_collision_pair.describe();
  plan.min_clearance_m = report.min_clearance_m;
  plan.min_stage_clearance_m = report.min_stage_clearance_m;
  plan.min_stage_clearance_sample = report.min_stage_clearance_sample;
  plan.min_tension_N = report.simulation.min_tension_N;
  for (const LimitViolation& v : checkInputLimits(model, plan.inputs, plan.rate_hz))
    plan.limit_violations.push_back(v.describe());
}


void classifyPlan(const GoalSpec& goal, Plan& plan) {
  const bool clear = !(plan.min_stage_clearance_m < plan.clearance_margin_m);
  if (plan.collision_free && plan.goal_sample >= 0 && plan.limit_violations.empty() && clear) {
    plan.outcome = PlanOutcome::Exact;
    plan.message.clear();
    return;
  }
  plan.outcome = PlanOutcome::Approximate;
  std::ostringstream why;
  if (!plan.collision_free)
    why << "collision at t=" << plan.first_collision / plan.rate_hz << " s ("
        << plan.collision_pair << ")";
  else if (!plan.limit_violations.empty())
    why << "input limits: " << plan.limit_violations.front();
  else if (!clear)
    why << "clearance to the stage " << plan.min_stage_clearance_m << " m at t="
        << plan.min_stage_clearance_sample / plan.rate_hz << " s, below the margin "
        << plan.clearance_margin_m << " m";
  else if (goal.at_rest)  // (the distance: the pose error plus the tolerance per multiple of
                          // the kinetic energy's bound it exceeds)
    why << "goal not reached at rest: closest " << plan.goal_distance_min
        << " (the pose error and the motion left; tolerance " << goal.effectiveTolerance() << ")";
  else
    why << "goal not reached: closest " << plan.goal_distance_min << " (tolerance "
        << goal.effectiveTolerance() << ")";
  plan.message = why.str();
}

Plan planHeader(const MotionProblem& problem, const CollisionModel& collision, double rate_hz) {
  const Model& model = *problem.model;
  Plan plan;
  plan.model = model.name;
  plan.scene = collision.scene().name;
  plan.goal = problem.goal.describe();
  plan.start = problem.start_text;
  plan.rate_hz = rate_hz;
  plan.input_names = itemNames(model.kinematic);
  plan.predicted.state_names = itemNames(model.dynamic);
  plan.predicted.string_names = itemNames(model.strings);
  return plan;
}

Plan verifyMotion(const MotionProblem& req, const Eigen::MatrixXd& inputs, double rate_hz) {
  const auto t0 = SteadyClock::now();
  if (!req.model) throw FieldError("model", "none given");
  const Model& model = *req.model;
  if (inputs.rows() < 2 || inputs.cols() != model.nk())
    throw FieldError("inputs", "expected at least 2 rows of " + std::to_string(model.nk()) +
                                   " values, got " + std::to_string(inputs.rows()) + " x " +
                                   std::to_string(inputs.cols()));
  if (!(rate_hz >= 1.0 && rate_hz <= 1000.0))
    throw FieldError("rate_hz", "must be within [1, 1000] Hz, got " + formatNumber(rate_hz));
  const CollisionModelPtr collision = collisionModelOf(req);
  checkGoal(req.model, req.goal, collision->scene());  // before anything runs
  GoalEvaluator goal(req.model, req.goal);
  Plan plan = planHeader(req, *collision, rate_hz);
  plan.stats.planner = "given";
  Plan verified = plan;
  verified.inputs = inputs;
  try {
    verifyPlan(req, collision, verified);
  } catch (const SimulationError& e) {
    plan.outcome = PlanOutcome::NotFound;
    plan.message = std::string("the re-simulation of the inputs failed: ") + e.what();
    return plan;
  }
  plan = std::move(verified);
  classifyPlan(req.goal, plan);
  try {
    measurePlanQuality(req, *collision, plan);
  } catch (const SimulationError&) {
    plan.quality = PlanQuality{};
  }
  plan.stats.verification_time_s = plan.stats.total_time_s = secondsSince(t0);
  requireFiniteNumbers(plan);
  return plan;
}

}  // namespace marionette
