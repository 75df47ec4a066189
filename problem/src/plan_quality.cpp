// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/problem/plan_quality.hpp"

#include <algorithm>
#include <cmath>

#include "marionette/common/text.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/simulation.hpp"

namespace marionette {

namespace {
constexpr double kLoadedString_N = 0.05;
// A snap: a catch whose tension within kSnapWindow_s exceeds kSnapFactor times the string's load
// scale.
constexpr double kSnapWindow_s = 0.1, kSnapFactor = 3.0;
}  // namespace

void measurePlanQuality(const MotionProblem& request, const CollisionModel& collision, Plan& plan,
                        double settle_s) {
  PlanQuality q;
  q.settle_s = settle_s;
  const int n = plan.samples();
  if (n < 1 || !request.model) {
    plan.quality = q;
    return;
  }
  const Model& model = *request.model;
  const int nk = model.nk(), nd = model.nd(), ns = model.nstrings();
  const double dt = 1.0 / plan.rate_hz;
  q.measured = true;
  q.duration_s = plan.duration_s();

  // Jerk: third differences of the samples.
  q.input_jerk_rms = Eigen::VectorXd::Zero(nk);
  double all = 0.0;
  int terms = 0;
  for (int j = 0; j < nk; ++j) {
    double sum = 0.0;
    int count = 0;
    for (int i = 0; i + 3 < n; ++i, ++count) {
      const double d3 = plan.inputs(i + 3, j) - 3 * plan.inputs(i + 2, j) +
                        3 * plan.inputs(i + 1, j) - plan.inputs(i, j);
      sum += std::pow(d3 / (dt * dt * dt), 2);
    }
    q.input_jerk_rms[j] = count ? std::sqrt(sum / count) : 0.0;
    all += sum;
    terms += count;
  }
  q.input_jerk_rms_overall = terms ? std::sqrt(all / terms) : 0.0;

  // The motion, then the last inputs held settle_s.
  const InputSchedule schedule = planInputs(plan);
  SimulationOptions so = planSimulation(plan, settle_s);
  so.start = request.start;
  so.contacts = collision.contacts();
  const int hold_steps = static_cast<int>(std::lround(settle_s * plan.rate_hz));
  const RestPose at_end = computeRestPose(request.model, plan.inputs.row(n - 1).transpose(),
                                          nullptr, standingOn(collision.contacts()));
  Eigen::VectorXd static_start, peak = Eigen::VectorXd::Zero(ns);
  std::vector<int> peak_row(ns, 0);
  // A catch: a loaded string that has been taut, went slack and snaps taut again.  (A string
  // slack at the start that takes up its load once is not a catch.)
  std::vector<char> taut(ns, 1), was_taut(ns, 0);
  std::vector<Eigen::VectorXd> late_q;  // the hold's second half
  const int late_from = n - 1 + hold_steps - hold_steps / 2;
  // Snaps: every slack -> taut switch (a string slack from the start too) watched for
  // kSnapWindow_s against the string's load scale, the larger of its static tensions and at
  // least a tenth of the largest of any string's.
  const int snap_window = std::max(1, static_cast<int>(std::lround(kSnapWindow_s * plan.rate_hz)));
  Eigen::VectorXd load_scale;
  std::vector<int> watch_until(ns, -1);  // the last row of a switch's window, or -1
  std::vector<char> snapped(ns, 0);
  int row = 0;
  simulate(request.model, schedule, so, [&](const SimulationRow& r) {
    if (row == 0) {
      static_start = *r.tension_N;
      load_scale = at_end.ok ? static_start.cwiseMax(at_end.tension_N) : static_start;
      const double largest = load_scale.size() > 0 ? load_scale.maxCoeff() : 0.0;
      load_scale = load_scale.cwiseMax(std::max(0.1 * largest, 1e-3));
    }
    for (int j = 0; j < ns; ++j) {
      const double tension_N = (*r.tension_N)[j];
      const bool now_taut = tension_N > 0.0;
      const double load = std::max(static_start[j], at_end.ok ? at_end.tension_N[j] : 0.0);
      if (row > 0 && load >= kLoadedString_N && now_taut && !taut[j] && was_taut[j])
        ++q.string_catches;
      if (row > 0 && now_taut && !taut[j]) {
        watch_until[j] = row + snap_window - 1;
        snapped[j] = 0;
      }
      if (row <= watch_until[j] && !snapped[j] && tension_N > kSnapFactor * load_scale[j]) {
        snapped[j] = 1;
        if (q.snaps++ == 0) {
          q.first_snap_string = model.strings[j].name;
          q.first_snap_t_s = (watch_until[j] - snap_window + 1) * dt;  // when it went taut
        }
      }
      taut[j] = now_taut;
      was_taut[j] = was_taut[j] || now_taut;
      if (tension_N > peak[j]) {
        peak[j] = tension_N;
        peak_row[j] = row;
      }
    }
    if (row >= late_from - 1) late_q.push_back(*r.q);
    ++row;
    return true;
  });
  for (int j = 0; j < ns; ++j) {
    const double load = std::max(static_start[j], at_end.ok ? at_end.tension_N[j] : 0.0);
    if (load < kLoadedString_N) continue;
    if (peak[j] / load > q.peak_tension_ratio) {
      q.peak_tension_ratio = peak[j] / load;
      q.peak_tension_string = model.strings[j].name;
      q.peak_tension_t_s = peak_row[j] * dt;
    }
  }
  // Joint speeds over the hold's second half, the joint that swings most; the kinetic energy at
  // its end.
  double speed2 = 0.0;
  int speeds = 0;
  Eigen::VectorXd v = Eigen::VectorXd::Zero(nd), joint_speed2 = Eigen::VectorXd::Zero(nd);
  for (std::size_t i = 1; i < late_q.size(); ++i) {
    v = (late_q[i] - late_q[i - 1]) / dt;
    speed2 += v.squaredNorm();
    speeds += nd;
    joint_speed2 += v.cwiseAbs2();
  }
  q.residual_joint_speed_rms = speeds ? std::sqrt(speed2 / speeds) : 0.0;
  if (speeds) {
    Eigen::Index most = 0;
    q.swing_joint_speed_rms = std::sqrt(joint_speed2.maxCoeff(&most) * nd / speeds);
    q.swing_joint = model.dynamic[most].name;
  }
  if (!late_q.empty()) {
    DynamicsData data(model);
    const Eigen::VectorXd q_full =
        model.configuration(late_q.back(), plan.inputs.row(n - 1).transpose());
    forwardKinematics(model, data, q_full);
    computeLagrangian(model, data, q_full, Eigen::VectorXd::Zero(nd), LagrangianOrder::MassMatrix);
    q.residual_kinetic_energy_J = 0.5 * v.dot(data.M * v);
  }
  plan.quality = q;
}

std::vector<std::string> stageShortfalls(const Plan& plan, const StageThresholds& limits) {
  std::vector<std::string> out;
  if (plan.outcome != PlanOutcome::Exact) out.push_back(std::string(toString(plan.outcome)));
  if (plan.samples() == 0) return out;
  if (!(plan.min_stage_clearance_m >= limits.min_stage_clearance_m))
    out.push_back(formatted("%.4f m from the stage < %g", plan.min_stage_clearance_m,
                            limits.min_stage_clearance_m) +
                  (plan.min_stage_clearance_sample >= 0
                       ? formatted(" (at %.2f s)", plan.min_stage_clearance_sample / plan.rate_hz)
                       : std::string()));
  if (!(plan.min_clearance_m >= limits.min_clearance_m))
    out.push_back(formatted("%.4f m from anything < %g", plan.min_clearance_m,
                            limits.min_clearance_m));
  const PlanQuality& q = plan.quality;
  if (!q.measured || q.settle_s != 1.0) {
    out.push_back("quality not measured with a 1 s hold");
    return out;
  }
  if (q.snaps > 0)
    out.push_back(formatted("%d snap%s (the first: %s at %.2f s)", q.snaps,
                            q.snaps == 1 ? "" : "s", q.first_snap_string.c_str(),
                            q.first_snap_t_s));
  if (!(q.peak_tension_ratio <= limits.max_peak_tension_ratio))
    out.push_back(formatted("peak tension x%.3g > %g (%s at %.2f s)", q.peak_tension_ratio,
                            limits.max_peak_tension_ratio, q.peak_tension_string.c_str(),
                            q.peak_tension_t_s));
  if (!(q.residual_joint_speed_rms <= limits.max_residual_joint_speed_rms))
    out.push_back(formatted("swing %.3g rad/s > %g (most: %s, %.3g)", q.residual_joint_speed_rms,
                            limits.max_residual_joint_speed_rms, q.swing_joint.c_str(),
                            q.swing_joint_speed_rms));
  return out;
}

}  // namespace marionette
