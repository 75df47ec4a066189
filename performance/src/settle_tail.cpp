// SPDX-License-Identifier: BSD-3-Clause
#include "settle_tail.hpp"

#include <algorithm>
#include <cmath>

#include "calm_reference.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "marionette/problem/verification.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"

namespace marionette::detail {

namespace {

// Where a tail starts: the last sample's configuration, the velocity of the last step, the last
// inputs; the tail's rows at the performance's rate.  Empty q: no motion to settle.
struct TailStart {
  Eigen::VectorXd q, qdot, rho;
  int rows = 0;
};

TailStart tailStart(const Plan& performance, double tail_s) {
  TailStart s;
  const int n = performance.samples();
  if (n < 2 || performance.predicted.states.rows() < n) return s;
  s.q = performance.predicted.states.row(n - 1).transpose();
  s.qdot = (s.q - performance.predicted.states.row(n - 2).transpose()) * performance.rate_hz;
  s.rho = performance.inputs.row(n - 1).transpose();
  s.rows = std::max(3, static_cast<int>(std::lround(tail_s * performance.rate_hz)) + 1);
  return s;
}

// The rig's steps before the tail, latest first (HorizonTracking::rig_history).
Eigen::MatrixXd rigHistory(const Plan& performance) {
  return performance.inputs.topRows(performance.samples() - 1).colwise().reverse();
}

}  // namespace

SettleTail settleTail(const MotionProblem& request, const Plan& performance, double tail_s,
                      double margin_m, double time_limit_s) {
  SettleTail out;
  const Model& m = *request.model;
  const TailStart start = tailStart(performance, tail_s);
  if (start.q.size() == 0) {
    out.message = "the performance has no motion to settle";
    return out;
  }
  Eigen::VectorXd q = start.q;
  const Eigen::VectorXd& qdot = start.qdot;
  const Eigen::VectorXd& rho = start.rho;
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
  Plan hold;
  try {
    hold = verifyMotion(tail, rho.transpose().replicate(start.rows, 1), performance.rate_hz);
  } catch (const FieldError& e) {
    out.message = std::string("its start or end has no rest pose: ") + e.what();
    return out;
  }
  OptimizationOptions options;
  options.margin_m = margin_m;
  options.time_limit_s = time_limit_s;
  // The rig goes on from where the performance leaves it moving (its speed and acceleration at
  // the join within the limits).
  options.rig_history = rigHistory(performance);
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
  const TailStart start = tailStart(performance, tail_s);
  if (start.q.size() == 0) {
    out.message = "the performance has no motion to settle";
    return out;
  }
  const Eigen::VectorXd& q = start.q;
  const Eigen::VectorXd& rho = start.rho;
  const int rows = start.rows;
  IntegratorOptions io;
  io.dt_s = 1.0 / performance.rate_hz;
  VariationalIntegrator vi(like.model, io);
  like.start = vi.stateFromVelocity(q, start.qdot, rho);
  like.rig_history = rigHistory(performance);
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

std::string settleEnd(const EndSettling& end, Plan& out) {
  // (Over 1.5 s the windows left 0.06-0.21 rad/s on four random PuppetCopter clips, one under 0.1;
  // over 2.5 s 0.05-0.21, two under 0.1: docs/decisions/0014.)
  constexpr double kTrackedTail_s = 2.5;
  const MotionProblem& request = *end.request;
  const Model& m = *request.model;
  // `tail` appended and judged: "" when kept (`out` then has it), else why not.
  auto append = [&](const SettleTail& tail) -> std::string {
    if (tail.inputs.rows() == 0) return tail.message;
    Eigen::MatrixXd inputs(out.inputs.rows() + tail.inputs.rows(), m.nk());
    inputs << out.inputs, tail.inputs;
    for (int j : end.disabled) inputs.col(j).setConstant(end.start_inputs[j]);
    try {
      Plan settled = end.plan_of(inputs);
      measurePlanQuality(request, *end.collision, settled, end.settle_s);
      if (settled.outcome != PlanOutcome::Exact)
        return "its motion is " + std::string(toString(settled.outcome)) + " (" +
               settled.message + ")";
      if (settled.quality.residual_joint_speed_rms >= out.quality.residual_joint_speed_rms)
        return formatted("it leaves %.3g rad/s, the end held %.3g",
                         settled.quality.residual_joint_speed_rms,
                         out.quality.residual_joint_speed_rms);
      // (Less swing for a snap is no show's.)
      if (settled.quality.snaps > out.quality.snaps)
        return formatted("it snaps %d times, the end held %d", settled.quality.snaps,
                         out.quality.snaps);
      settled.performance.tracking = out.performance.tracking;
      out = std::move(settled);
      return "";
    } catch (const SimulationError& e) {
      return std::string("its re-simulation failed: ") + e.what();
    }
  };
  const double rate_hz = out.rate_hz;
  const double held_swing = out.quality.residual_joint_speed_rms;
  const SettleTail tail =
      settleTail(request, out, std::max(end.settle_s, 1.5), end.margin_m, end.time_left_s);
  throwIfCancelled("performance");
  const std::string dropped = append(tail);
  if (dropped.empty())
    return formatted("the end settled over %.2f s (%d iterations)", tail.inputs.rows() / rate_hz,
                     tail.iterations);
  if (end.time_left_s > 0 && !end.in_time())
    return "the end was not settled: " + dropped + "; " + end.deadline + " had passed";
  std::string held_dropped;
  SettleTail held;
  try {
    held = settleByTracking(end.windows, out, std::max(end.settle_s, kTrackedTail_s),
                            calmPoints(m, {}, {}, {}));
    held_dropped = append(held);
  } catch (const SimulationError& e) {
    held_dropped = std::string("its windows could not be re-simulated: ") + e.what();
  }
  throwIfCancelled("performance");
  if (held_dropped.empty())
    return formatted("the end settled over %.2f s to %.3g rad/s (%.3g held) by %s "
                     "(%d iterations; the transcription's tail: %s)",
                     held.inputs.rows() / rate_hz, out.quality.residual_joint_speed_rms,
                     held_swing, held.message.c_str(), held.iterations, dropped.c_str());
  return "the end was not settled: " + dropped + "; by the windows holding it at rest: " +
         held_dropped;
}

}  // namespace marionette::detail
