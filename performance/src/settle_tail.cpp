// SPDX-License-Identifier: BSD-3-Clause
#include "settle_tail.hpp"

#include <algorithm>
#include <cmath>

#include "calm_reference.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/problem/verification.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"

namespace marionette::detail {

SettleTail settleTail(const MotionProblem& request, const Plan& performance, double tail_s,
                      double margin_m, double time_limit_s) {
  SettleTail out;
  const Model& m = *request.model;
  const int n = performance.samples();
  if (n < 2 || performance.predicted.states.rows() < n) {
    out.message = "the performance has no motion to settle";
    return out;
  }
  // The start: the last sample's configuration and the velocity of the last step.
  Eigen::VectorXd q = performance.predicted.states.row(n - 1).transpose();
  const Eigen::VectorXd qdot =
      (q - performance.predicted.states.row(n - 2).transpose()) * performance.rate_hz;
  const Eigen::VectorXd rho = performance.inputs.row(n - 1).transpose();
  // A taut string is at its length to the step's tolerance; a start is within it to 1e-12.
  if (!projectOntoStrings(m, q, rho, {})) {
    out.message = "its start is not within the strings' lengths";
    return out;
  }
  MotionProblem tail = request;
  tail.start_inputs = rho;
  tail.start = StartSpec{};
  for (int i = 0; i < m.nd(); ++i) {
    tail.start.positions.emplace_back(m.dynamic[i].name, q[i]);
    tail.start.velocities.emplace_back(m.dynamic[i].name, qdot[i]);
  }
  tail.start_text = "the performance's end";
  tail.goal = GoalSpec{};
  tail.goal.kind = GoalSpec::Kind::RestOf;
  for (int j = 0; j < m.nk(); ++j) tail.goal.values.emplace_back(m.kinematic[j].name, rho[j]);
  tail.goal.at_rest = true;
  // Back near the last inputs: within 3 cm (or 30 mrad), where the goal's default allows 5.
  tail.goal.tolerance = 0.03;
  tail.goal.rest_guess_q = q;
  tail.goal.rest_contacts = request.collision ? request.collision->contacts() : nullptr;

  // What the optimizer improves on: the last inputs held.
  const int rows = std::max(3, static_cast<int>(std::lround(tail_s * performance.rate_hz)) + 1);
  Plan hold;
  try {
    hold = verifyMotion(tail, rho.transpose().replicate(rows, 1), performance.rate_hz);
  } catch (const FieldError& e) {
    out.message = std::string("its start or end has no rest pose: ") + e.what();
    return out;
  }
  OptimizationOptions options;
  options.margin_m = margin_m;
  options.time_limit_s = time_limit_s;
  // The rig goes on from where the performance leaves it moving (its speed and acceleration at
  // the join within the limits).
  options.rig_history = performance.inputs.topRows(n - 1).colwise().reverse();
  try {
    const OptimizedPlan settled = optimizePlan(tail, hold, options);
    out.iterations = settled.report.iterations;
    if (!settled.report.improved || settled.plan.outcome != PlanOutcome::Exact) {
      out.message =
          settled.report.message.empty() ? "no motion to rest found" : settled.report.message;
      return out;
    }
    out.inputs = settled.plan.inputs.bottomRows(settled.plan.inputs.rows() - 1);
    out.message = settled.report.method;
  } catch (const FieldError& e) {
    out.message = e.what();
  }
  return out;
}

SettleTail settleByTracking(HorizonTracking like, const Plan& performance, double tail_s,
                            const std::vector<int>& points) {
  SettleTail out;
  const int n = performance.samples();
  if (n < 2 || performance.predicted.states.rows() < n) {
    out.message = "the performance has no motion to settle";
    return out;
  }
  const Eigen::VectorXd q = performance.predicted.states.row(n - 1).transpose();
  const Eigen::VectorXd qdot =
      (q - performance.predicted.states.row(n - 2).transpose()) * performance.rate_hz;
  const Eigen::VectorXd rho = performance.inputs.row(n - 1).transpose();
  IntegratorOptions io;
  io.dt_s = 1.0 / performance.rate_hz;
  VariationalIntegrator vi(like.model, io);
  const int rows = std::max(3, static_cast<int>(std::lround(tail_s * performance.rate_hz)) + 1);
  like.start = vi.stateFromVelocity(q, qdot, rho);
  like.rig_history = performance.inputs.topRows(n - 1).colwise().reverse();
  like.reference_inputs = rho.transpose().replicate(rows, 1);
  like.track_points = points;
  like.track_targets_m =
      restPointMotion(like.model, like.reference_inputs, points, q,
                      like.collision ? like.collision->contacts() : nullptr);
  like.track_point_weight.clear();
  like.track_sample_weight.resize(0, 0);
  like.track_variables.clear();
  like.track_values.resize(0, 0);
  like.track_variable_scale_m.clear();
  like.progress = nullptr;
  const HorizonTrackingResult held = trackOverHorizon(like);
  if (held.stopped_at >= 0) {
    out.message = "the deadline stopped its windows";
    return out;
  }
  if (held.kept_warm + held.solve_failed == held.windows) {
    out.message = "no window found a motion better than holding the last inputs";
    return out;
  }
  out.inputs = held.inputs.bottomRows(rows - 1);
  for (int j : like.held_inputs) out.inputs.col(j).setConstant(rho[j]);
  out.iterations = held.iterations;
  out.message = formatted("%d windows holding the puppet where it rests at its last inputs",
                          held.windows);
  return out;
}

}  // namespace marionette::detail
