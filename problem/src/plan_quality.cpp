// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/problem/plan_quality.hpp"

#include <algorithm>
#include <cmath>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/simulation.hpp"

namespace marionette {

namespace {
constexpr double kLoadedString_N = 0.05;
}  // namespace

void measurePlanQuality(const MotionProblem& request, Plan& plan, double settle_s) {
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
  const int hold_steps = static_cast<int>(std::lround(settle_s * plan.rate_hz));
  const RestPose at_end = computeRestPose(request.model, plan.inputs.row(n - 1).transpose());
  Eigen::VectorXd static_start, peak = Eigen::VectorXd::Zero(ns);
  // A catch: a loaded string that has been taut, went slack and snaps taut again.  (A string
  // slack at the start that takes up its load once is not a catch.)
  std::vector<char> taut(ns, 1), was_taut(ns, 0);
  std::vector<Eigen::VectorXd> late_q;  // the hold's second half
  const int late_from = n - 1 + hold_steps - hold_steps / 2;
  int row = 0;
  simulate(request.model, schedule, so, [&](const SimulationRow& r) {
    if (row == 0) static_start = *r.tension_N;
    for (int j = 0; j < ns; ++j) {
      const bool now_taut = (*r.tension_N)[j] > 0.0;
      const double load = std::max(static_start[j], at_end.ok ? at_end.tension_N[j] : 0.0);
      if (row > 0 && load >= kLoadedString_N && now_taut && !taut[j] && was_taut[j])
        ++q.string_catches;
      taut[j] = now_taut;
      was_taut[j] = was_taut[j] || now_taut;
      peak[j] = std::max(peak[j], (*r.tension_N)[j]);
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
    }
  }
  // Joint speeds over the hold's second half; the kinetic energy at its end.
  double speed2 = 0.0;
  int speeds = 0;
  Eigen::VectorXd v = Eigen::VectorXd::Zero(nd);
  for (std::size_t i = 1; i < late_q.size(); ++i) {
    v = (late_q[i] - late_q[i - 1]) / dt;
    speed2 += v.squaredNorm();
    speeds += nd;
  }
  q.residual_joint_speed_rms = speeds ? std::sqrt(speed2 / speeds) : 0.0;
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

}  // namespace marionette
