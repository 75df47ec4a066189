// SPDX-License-Identifier: BSD-3-Clause
// Estimation and tracking on perturbed puppets (Schultz & Murphey, "Embedded Control Synthesis
// Using One-Step Methods in Discrete Mechanics", ACC 2013; docs/benchmarks.md, "Closed loop").
//
//   build/bin/bench_tracking estimation [--seeds N] [--rates 30,60,120]
//       The EKF on the VI one-step map against the Euler-process EKF (Schultz & Murphey, ACC
//       2013, Fig. 3): the suspended mass swung by its robot, and the README's PuppetCopter
//       plan; the truth simulated at 1 kHz (inputs interpolated linearly between the filter's
//       ticks), markers measured at the filter's rate with 2 mm noise.  Prints the rms joint
//       error of each filter and their ratio, per rate.
//   build/bin/bench_tracking tracking --plan PLAN.json[,PLAN2.json] [--seeds N]
//       The executor on the simulated rig in real time, open loop and closed loop (LQR along the
//       plan with the VI-EKF), on truths whose part masses are each scaled by a factor drawn in
//       [0.9, 1.1] (the seed's), whose constant-length strings are 5 mm longer and whose joint
//       damping is x3; every named point measured at 30 Hz with 2 mm noise and 10 ms latency.
//       Prints per plan, seed and loop: the stop, the rms joint error and each goal point's
//       error at the end (from the truth), corrections, clamps and the cycle's p99.
//       --perturb none|masses,strings,damping picks what the truth changes; --noise M the
//       markers' noise; --weight NAME=VALUE,... the LQR's weights; --process-noise POS,VEL the
//       filter's; --max-deviation X the drift bound; --max-correction X the corrections'
//       bound; --push POINT:T:VX,VY,VZ (repeatable) a
//       blow as sim:'s push; --calibrate N a third run each, LQR after a calibration at rest at
//       N poses (executor/rig_calibration.hpp), the fitted strings' error against the truth's
//       printed as a comment; --feedback mpc [--horizon S] [--iterations N] [--lead S] the
//       receding-horizon controller in place of the LQR, its solves printed as a comment
//       (--point-weight W: the named points as its targets, PredictiveOptions::point_weight;
//       --every S: a solve every S seconds); --exact-strings yes: the closed loop's model has
//       the truth's string lengths (an exact calibration in no time); --closed-only yes: no
//       open-loop runs; --calibrate-masses NAME,...: the calibration fits those masses too.
//       The points furthest off and the estimate's error are printed as a comment.
//   build/bin/bench_tracking windows --plan PLAN.json [--seeds N] [--horizon S] [--weight ...]
//       One window of the MPC (trajopt/predictive_control.hpp, the closed loop's options) from
//       the plan's state kicked at 0.6 s (every joint's velocity off by a draw of 0.3 rad/s std)
//       and 0.1 s later: its cost re-simulated, warm start against solution, the share of the
//       step towards the solver's inputs taken, after 1 to 100 iterations, and the time.
//   build/bin/bench_tracking mpc-bound --plan PLAN.json[,...] [--seeds N] [--every S] [--lead S]
//       The MPC fed the truth's own state, off line (no filter, no noise, no clock), a solve every
//       S seconds for the sample --lead ahead (0: the sample it starts at), its model given the
//       truth's strings; the truth as tracking's, with its --push.  Prints the mean point rms of
//       open loop and of the MPC, their ratio, and the solves.
//   build/bin/bench_tracking state-feedback --plan PLAN.json[,...] [--seeds N]
//       The bound on any estimator: LQR fed the truth's own state, off line (no noise, no
//       limits), against open loop, on the same truths.  Prints the joints rms of each, their
//       ratio, and the three joints with the largest error in each; a failed step after the row.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "marionette/common/text.hpp"
#include "marionette/control/estimator.hpp"
#include "marionette/control/tracking_lqr.hpp"
#include "marionette/executor/closed_loop.hpp"
#include "marionette/executor/executor.hpp"
#include "marionette/executor/rig_calibration.hpp"
#include "marionette/executor/tracking_report.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/plan/plan_file.hpp"

namespace {

using namespace marionette;
using namespace marionette::control;

struct Motion {
  std::string name;
  ModelPtr model;
  Eigen::MatrixXd inputs;  // rows at `rate_hz`
  double rate_hz;
  Eigen::VectorXd q0;      // the start (at rest)
};

Motion swingingMass() {
  Motion m{"suspended-mass", loadModel("suspended-mass"), {}, 600.0, {}};
  const int n = 6 * 600 + 1;
  m.inputs.resize(n, 2);
  for (int k = 0; k < n; ++k) {
    const double t = k / m.rate_hz;
    m.inputs(k, 0) = 0.25 * std::sin(2.5 * t);
    m.inputs(k, 1) = 0.5 - 0.1 * std::sin(1.3 * t);
  }
  m.q0 = computeRestPose(m.model, m.inputs.row(0).transpose()).q;
  return m;
}

// Linear interpolation of rows given at `rate` to time t.
Eigen::VectorXd inputAt(const Motion& m, double t) {
  const double x = std::min(t * m.rate_hz, static_cast<double>(m.inputs.rows() - 1));
  const Eigen::Index i = std::min<Eigen::Index>(static_cast<Eigen::Index>(x), m.inputs.rows() - 2);
  const double f = x - static_cast<double>(i);
  return ((1 - f) * m.inputs.row(i) + f * m.inputs.row(i + 1)).transpose();
}

struct EstimationResult {
  double rms_vi = 0, rms_euler = 0;
};

// The truth at 1 kHz; both filters at `rate` on the same measurements.
EstimationResult estimate(const Motion& m, double rate, unsigned seed, double noise_m) {
  const double duration = (m.inputs.rows() - 1) / m.rate_hz;
  const int fine = std::max(1, static_cast<int>(std::lround(1000.0 / rate)));
  IntegratorOptions to;
  to.dt_s = 1.0 / (rate * fine);
  VariationalIntegrator truth(m.model, to);
  State x = truth.stateFromVelocity(m.q0, Eigen::VectorXd::Zero(m.model->nd()), inputAt(m, 0));
  State next = x;
  const auto meas = std::make_shared<MeasurementModel>(
      m.model, MeasurementSpec::allPoints(*m.model, noise_m));
  DynamicsData d(*m.model);
  std::mt19937 rng(seed);
  std::normal_distribution<double> g(0, 1);
  EstimatorOptions o;
  o.dt_s = 1.0 / rate;
  o.position_std = 1e-4;  // the defaults of EstimatorOptions, for both filters
  o.velocity_std = 0.02;
  o.process = ProcessModel::VariationalIntegrator;
  Estimator vi(m.model, meas, o);
  o.process = ProcessModel::Euler;
  Estimator eu(m.model, meas, o);
  vi.reset(m.q0, Eigen::VectorXd::Zero(m.model->nd()), inputAt(m, 0));
  eu.reset(m.q0, Eigen::VectorXd::Zero(m.model->nd()), inputAt(m, 0));
  double e_vi = 0, e_eu = 0;
  long n = 0;
  const int ticks = static_cast<int>(std::floor(duration * rate + 1e-9));
  Eigen::VectorXd y;
  for (int k = 1; k <= ticks; ++k) {
    for (int s = 1; s <= fine; ++s) {
      const double t = ((k - 1) * fine + s) * to.dt_s;
      if (truth.step(x, inputAt(m, t), next) != StepStatus::Ok) throw std::runtime_error("truth");
      std::swap(x, next);
    }
    const Eigen::VectorXd u = inputAt(m, k / rate);
    vi.predict(u);
    eu.predict(u);
    meas->evaluate(d, m.model->configuration(x.q, x.rho), y);
    for (Eigen::Index i = 0; i < y.size(); ++i) y[i] += noise_m * g(rng);
    vi.update(k, y);
    eu.update(k, y);
    e_vi += (vi.q() - x.q).squaredNorm();
    e_eu += (eu.q() - x.q).squaredNorm();
    n += m.model->nd();
  }
  return {std::sqrt(e_vi / n), std::sqrt(e_eu / n)};
}

int estimation(int seeds, const std::vector<double>& rates, const std::string& plan_path) {
  std::vector<Motion> motions = {swingingMass()};
  if (!plan_path.empty()) {
    const Plan p = readPlanFile(plan_path);
    Motion m{"plan " + plan_path, loadModel(p.model), p.inputs, p.rate_hz, {}};
    m.q0 = p.predicted.states.row(0).transpose();
    motions.push_back(m);
  }
  std::printf("| motion | filter rate | VI-EKF rms | Euler-EKF rms | VI / Euler |\n");
  std::printf("| --- | --- | --- | --- | --- |\n");
  for (const Motion& m : motions)
    for (double rate : rates) {
      double vi = 0, eu = 0;
      for (int s = 0; s < seeds; ++s) {
        const EstimationResult r = estimate(m, rate, 1000 + s, 0.002);
        vi += r.rms_vi / seeds;
        eu += r.rms_euler / seeds;
      }
      std::printf("| %s | %g Hz | %.4g | %.4g | %.2f |\n", m.name.c_str(), rate, vi, eu, vi / eu);
      std::fflush(stdout);
    }
  return 0;
}

// What the truth changes: masses (and their inertias) each x U[0.9, 1.1], constant-length
// strings + 5 mm, joint damping x 3.
struct Perturbation {
  bool masses = true, strings = true, damping = true;
};

// The truth for seed `seed`.
ModelPtr perturbedTruth(const Model& model, unsigned seed, const Perturbation& what) {
  auto truth = std::make_shared<Model>(model);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> scale(0.9, 1.1);
  if (what.masses)
    for (Mass& m : truth->masses) {
      const double f = scale(rng);
      m.mass_kg *= f;
      m.inertia_kgm2 *= f;
    }
  if (what.strings)
    for (String& s : truth->strings)
      if (s.length_variable < 0) s.length_m += 0.005;
  if (what.damping)
    for (DynamicVariable& d : truth->dynamic) d.damping *= 3.0;
  return truth;
}

// Closed-loop options the command line changes (0: the default).
struct ClosedLoopOptionsPatch {
  double max_deviation = 0.0;
  double max_correction = 0.0;
  double marker_noise_m = 0.002;
  std::vector<marionette::executor::SimTruth::Push> pushes;  // --push POINT:T:VX,VY,VZ
  int calibration_poses = 0;  // --calibrate N: a third run each, calibrated at N poses first
  std::vector<std::string> calibration_masses;  // --calibrate-masses NAME,...: fitted too
  // --exact-strings: the closed loop's model has the truth's string lengths (an exact
  // calibration of the strings, in no time), its masses the model's.
  bool exact_strings = false;
  bool closed_only = false;  // --closed-only yes: no open-loop runs (their figures are the seed's)
  int hold_after_end = -1;   // --hold-after-end yes|no: the MPC's windows past the plan's end
  std::vector<std::pair<std::string, double>> weights;  // --weight NAME=VALUE,...
  double process_position_std = 0.0, process_velocity_std = 0.0;
  // --feedback mpc [--horizon S] [--iterations N] [--lead S]: the closed loop's runs with the MPC.
  bool predictive = false;
  double horizon_s = 0.0, lead_s = -1.0, every_s = 0.0, point_weight = -1.0;
  int iterations = 0;
};

void applyWeights(const ClosedLoopOptionsPatch& patch, LqrWeights& weights) {
  for (const auto& [name, value] : patch.weights)
    for (const auto& [field, target] : weightFields(weights))
      if (name == field) *target = value;
}

int tracking(int seeds, const std::vector<std::string>& plans, const Perturbation& what,
             const ClosedLoopOptionsPatch& patch) {
  using namespace marionette::executor;
  if (plans.empty()) {
    std::cerr << "bench_tracking tracking: needs --plan PLAN.json[,...]\n";
    return 2;
  }
  std::printf(
      "| plan | seed | loop | stop | joints rms | mean point rms (m) | goal point at the "
      "end (m) | worst point at the end (m) | largest correction | clamped | cycle p99 "
      "(ms) | misses |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const std::string& path : plans) {
    const Playback perf = loadPlanFile(path, nullptr);
    const Plan plan = readPlanFile(path);
    // The goal's point ("point:NAME=..."), else none.
    std::string goal_point;
    if (plan.goal.rfind("point:", 0) == 0)
      goal_point = plan.goal.substr(6, plan.goal.find('=') - 6);
    for (int s = 0; s < seeds; ++s) {
      // 0: open loop; 1: LQR; 2: LQR after a calibration at rest.
      for (int closed = patch.closed_only ? 1 : 0; closed < (patch.calibration_poses > 0 ? 3 : 2);
           ++closed) {
        SimTruth truth;
        truth.pushes = patch.pushes;
        truth.truth = perturbedTruth(*perf.model, 100 + s, what);
        for (const Point& p : perf.model->points) truth.sensing.markers.push_back(p.name);
        truth.sensing.rate_hz = 30.0;
        truth.sensing.latency_s = 0.01;
        truth.sensing.marker_noise_m = patch.marker_noise_m;
        truth.noise = patch.marker_noise_m;
        truth.seed = 100 + s;
        SimRig rig(perf.model, perf.rate_hz, truth);
        std::optional<RigCalibration> calibration;
        Eigen::VectorXd start = rig.readSetpoints();
        if (closed == 2) {
          RigCalibrationOptions co;
          co.poses = patch.calibration_poses;
          co.fit.masses = patch.calibration_masses;
          co.send_rate_hz = perf.rate_hz;
          calibration = calibrateOnRig(rig, perf.model, co, LinkOptions{});
          if (!calibration->ok) {
            std::printf("| %s | %d | lqr + calibration | calibration failed: %s |\n",
                        plan.model.c_str(), 100 + s, calibration->message.c_str());
            continue;
          }
          start = calibration->moves.last_sent;
          double worst_string = 0.0;  // the fit against the truth's own lengths
          for (const control::CalibratedParameter& c : calibration->fit.parameters)
            if (c.kind == control::CalibratedParameter::Kind::StringLength)
              worst_string = std::max(
                  worst_string,
                  std::abs(c.fitted -
                           truth.truth->strings[static_cast<std::size_t>(c.index)].length_m));
          // The masses' scales against the truth's, relative to the first mass held.
          double worst_mass = 0.0, held_factor = 1.0;
          for (std::size_t k = 0; k < perf.model->masses.size(); ++k)
            if (std::find(co.fit.masses.begin(), co.fit.masses.end(), perf.model->masses[k].name) ==
                co.fit.masses.end()) {
              held_factor = truth.truth->masses[k].mass_kg / perf.model->masses[k].mass_kg;
              break;
            }
          for (const control::CalibratedParameter& c : calibration->fit.parameters)
            if (c.kind == control::CalibratedParameter::Kind::MassScale) {
              const auto k = static_cast<std::size_t>(c.index);
              const double factor =
                  truth.truth->masses[k].mass_kg / perf.model->masses[k].mass_kg / held_factor;
              worst_mass = std::max(worst_mass, std::abs(c.fitted / factor - 1.0));
            }
          std::printf(
              "<!-- seed %d: calibrated at %zu poses in %.1f s, the strings to %.2f mm%s -->\n",
              100 + s, calibration->poses.size(), calibration->elapsed_s, 1e3 * worst_string,
              co.fit.masses.empty()
                  ? ""
                  : formatted(", the masses fitted to %.1f %%", 100.0 * worst_mass).c_str());
          rig.markRunStart();
        }
        const Stream stream = buildStream(perf, start, {});
        std::unique_ptr<ClosedLoop> loop;
        if (closed) {
          ClosedLoopOptions options = patch.predictive ? predictiveDefaults() : ClosedLoopOptions{};
          if (calibration) {
            options.calibrated = calibration->fit.model;
            options.rig_clock_start = calibration->first_frame_sent;
            options.start_q = calibration->fit.rest_q.back();
          }
          if (patch.exact_strings && !calibration) {
            auto exact = std::make_shared<Model>(*perf.model);
            exact->strings = truth.truth->strings;
            options.calibrated = exact;
          }
          if (patch.max_deviation > 0) options.max_deviation = patch.max_deviation;
          if (patch.max_correction > 0) options.max_correction = patch.max_correction;
          applyWeights(patch, options.weights);
          if (patch.process_position_std > 0) {
            options.estimator.position_std = patch.process_position_std;
            options.estimator.velocity_std = patch.process_velocity_std;
          }
          if (patch.predictive) {
            if (patch.horizon_s > 0) options.predictive.horizon_s = patch.horizon_s;
            if (patch.iterations > 0) options.predictive.iterations = patch.iterations;
            if (patch.lead_s >= 0) options.solve_lead_s = patch.lead_s;
            if (patch.every_s > 0) options.solve_period_s = patch.every_s;
            if (patch.point_weight >= 0) options.predictive.point_weight = patch.point_weight;
            if (patch.hold_after_end >= 0) options.predictive.hold_after_end = patch.hold_after_end;
          }
          loop = std::make_unique<ClosedLoop>(perf, stream, *rig.sensing(),
                                              std::vector<std::string>{}, options);
        }
        ExecuteOptions eo;
        eo.closed_loop = loop.get();
        const ExecuteReport run = execute(rig, stream, eo);
        const char* kind =
            closed ? toString(patch.predictive ? Feedback::Predictive : Feedback::Lqr) : "none";
        const TrackingReport r =
            buildTrackingReport(perf, stream, run, rig, loop.get(), kind, closed ? "ekf" : "");
        if (!run.message.empty() && r.stop != "completed")
          std::printf("<!-- seed %d: %s -->\n", 100 + s, run.message.c_str());
        {  // The points furthest off, rms.
          std::vector<TrackingReport::PointError> by_rms = r.points;
          std::sort(by_rms.begin(), by_rms.end(),
                    [](const auto& a, const auto& b) { return a.rms_m > b.rms_m; });
          std::string worst_points;
          for (std::size_t k = 0; k < std::min<std::size_t>(4, by_rms.size()); ++k)
            worst_points += formatted("%s%s %.1f cm", k ? ", " : "", by_rms[k].name.c_str(),
                                      100.0 * by_rms[k].rms_m);
          std::printf(
              "<!-- seed %d: furthest off (rms): %s; the estimate's points %.2f cm rms "
              "from the truth's -->\n",
              100 + s, worst_points.c_str(), 100.0 * r.estimation_rms_points_m);
        }
        if (const PredictiveStats* ps = loop ? loop->predictiveStats() : nullptr) {
          std::vector<double> ms = ps->solve_ms;
          std::sort(ms.begin(), ms.end());
          double iterations = 0.0;
          for (int n : ps->iterations) iterations += n;
          std::printf(
              "<!-- seed %d, mpc: %ld solves started (%ld skipped), %ld used, %ld late, %ld "
              "failed, %ld kept the warm start, %ld a shorter step; %.1f iterations a solve; solve "
              "p50 %.1f ms, p99 %.1f ms -->\n",
              100 + s, ps->started, ps->skipped, ps->used, ps->late, ps->failed, ps->kept_warm,
              ps->shortened, ps->iterations.empty() ? 0.0 : iterations / ps->iterations.size(),
              ms.empty() ? 0.0 : ms[ms.size() / 2],
              ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, (ms.size() * 99) / 100)]);
        }
        double worst = 0.0, at_goal = NAN, mean_rms = 0.0;
        for (const auto& p : r.points) {
          worst = std::max(worst, p.at_goal_m);
          mean_rms += p.rms_m / static_cast<double>(r.points.size());
          if (p.name == goal_point) at_goal = p.at_goal_m;
        }
        static const char* kLoops[] = {"open", "lqr + ekf", "lqr + ekf, calibrated"};
        static const char* kPredictiveLoops[] = {"open", "mpc + ekf", "mpc + ekf, calibrated"};
        std::printf(
            "| %s | %d | %s | %s | %.4f | %.4f | %s %.4f | %.4f | %.3g | %ld | %.3f | %ld "
            "|\n",
            plan.model.c_str(), 100 + s, (patch.predictive ? kPredictiveLoops : kLoops)[closed],
            r.stop.c_str(), r.joints_rms, mean_rms, goal_point.c_str(), at_goal, worst,
            r.correction_max, r.clamped, r.cycle_p99_ms, r.misses);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

// The truth's state as the model's filter would see it: q and rho as they are, p from the midpoint
// velocity of the last step (from q_prev, rho_prev) through the model's masses.
State seenByModel(VariationalIntegrator& vm, const State& x, const Eigen::VectorXd& q_prev,
                  const Eigen::VectorXd& rho_prev, double rate_hz) {
  State seen = vm.stateFromVelocity(0.5 * (x.q + q_prev), (x.q - q_prev) * rate_hz,
                                    0.5 * (x.rho + rho_prev));
  seen.q = x.q;
  seen.rho = x.rho;
  return seen;
}

// `inputs` (a row per sample, the first the start's) simulated from `start`, until a step fails.
std::vector<State> simulated(VariationalIntegrator& vi, const State& start,
                             const Eigen::MatrixXd& inputs) {
  std::vector<State> out = {start};
  for (Eigen::Index k = 1; k < inputs.rows(); ++k) {
    State next = vi.makeState();
    if (vi.step(out.back(), inputs.row(k).transpose(), next) != StepStatus::Ok) break;
    out.push_back(next);
  }
  return out;
}

// The closed loop's MPC options (predictiveDefaults: its weights, points and the corrections'
// bound, as ClosedLoop passes them), with the command line's changes.
PredictiveOptions predictiveOptions(const ClosedLoopOptionsPatch& patch) {
  const marionette::executor::ClosedLoopOptions loop = marionette::executor::predictiveDefaults();
  PredictiveOptions options = loop.predictive;
  options.weights = loop.weights;
  options.max_correction = patch.max_correction > 0 ? patch.max_correction : loop.max_correction;
  applyWeights(patch, options.weights);
  if (patch.horizon_s > 0) options.horizon_s = patch.horizon_s;
  if (patch.iterations > 0) options.iterations = patch.iterations;
  if (patch.point_weight >= 0) options.point_weight = patch.point_weight;
  return options;
}

// The bound on what any estimator could give: LQR fed the truth's own state (no filter, no
// noise, no limits), off line, against open loop, on the same perturbed truths.  The truth's
// state is put in the model's coordinates as a filter would see it: q and rho as they are, p
// from the midpoint velocity of the last step through the model's masses.
int stateFeedback(int seeds, const std::vector<std::string>& plans, const Perturbation& what,
                  const ClosedLoopOptionsPatch& patch) {
  if (plans.empty()) {
    std::cerr << "bench_tracking state-feedback: needs --plan PLAN.json[,...]\n";
    return 2;
  }
  std::printf("| plan | seed | open: joints rms | LQR on the true state: joints rms "
              "| closed / open | largest correction | largest joints, open | largest joints, "
              "closed |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const std::string& path : plans) {
    const Plan plan = readPlanFile(path);
    const ModelPtr model = loadModel(plan.model);
    IntegratorOptions io;
    io.dt_s = 1.0 / plan.rate_hz;
    VariationalIntegrator vm(model, io);
    const State start =
        vm.stateFromVelocity(plan.predicted.states.row(0).transpose(),
                             Eigen::VectorXd::Zero(model->nd()), plan.inputs.row(0).transpose());
    const TrajectoryLinearization lin = linearizeTrajectory(model, plan.inputs, start, io);
    LqrWeights weights;
    applyWeights(patch, weights);
    const TrackingGains gains = computeTrackingGains(model, lin, weights);
    const int nd = model->nd(), nk = model->nk();
    for (int s = 0; s < seeds; ++s) {
      const ModelPtr truth = perturbedTruth(*model, 100 + static_cast<unsigned>(s), what);
      VariationalIntegrator vt(truth, io);
      DynamicsData scratch(*model);
      double rms[2] = {0, 0}, largest = 0;
      Eigen::MatrixXd per_joint = Eigen::MatrixXd::Zero(nd, 2);  // mean square, open and closed
      std::string failed;
      for (int closed = 0; closed < 2; ++closed) {
        State x = vt.stateFromVelocity(computeRestPose(truth, plan.inputs.row(0).transpose()).q,
                                       Eigen::VectorXd::Zero(nd), plan.inputs.row(0).transpose());
        State next = x;
        Eigen::VectorXd q_prev = x.q, rho_prev = x.rho, previous_rig = Eigen::VectorXd::Zero(nk);
        Eigen::Index i = 1;
        double sum = 0;
        for (; i < plan.inputs.rows(); ++i) {
          Eigen::VectorXd u = plan.inputs.row(i).transpose();
          if (closed) {
            const State seen = seenByModel(vm, x, q_prev, rho_prev, plan.rate_hz);
            const std::size_t k = static_cast<std::size_t>(i - 1);
            const Eigen::VectorXd dx =
                feasibleDeviation(*model, scratch, seen, lin.x[k], lin.taut[k]);
            u += gains.correction(k, dx, previous_rig);
            previous_rig = dx.tail(nk);
            largest =
                std::max(largest, (u - plan.inputs.row(i).transpose()).cwiseAbs().maxCoeff());
          }
          q_prev = x.q;
          rho_prev = x.rho;
          if (vt.step(x, u, next) != StepStatus::Ok) {
            failed += formatted(" (%s: the truth's step failed at t = %.2f s)",
                                closed ? "closed" : "open", i / plan.rate_hz);
            break;
          }
          std::swap(x, next);
          const Eigen::VectorXd e = x.q - lin.x[static_cast<std::size_t>(i)].q;
          sum += e.squaredNorm() / nd;
          per_joint.col(closed) += e.cwiseAbs2();
        }
        rms[closed] = std::sqrt(sum / static_cast<double>(i - 1));
        per_joint.col(closed) /= static_cast<double>(i - 1);
      }
      std::string worst[2];
      for (int c = 0; c < 2; ++c)
        for (int w = 0; w < std::min(3, nd); ++w) {
          Eigen::Index j = 0;
          const double v = per_joint.col(c).maxCoeff(&j);
          worst[c] += formatted("%s%s %.3f", w ? ", " : "",
                                model->dynamic[static_cast<std::size_t>(j)].name.c_str(),
                                std::sqrt(v));
          per_joint(j, c) = -1;
        }
      std::printf("| %s | %d | %.4f | %.4f | %.2f | %.3g | %s | %s |%s\n", plan.model.c_str(),
                  100 + s, rms[0], rms[1], rms[1] / rms[0], largest, worst[0].c_str(),
                  worst[1].c_str(), failed.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}

// The bound on the MPC in real time: the controller fed the truth's own state (as
// state-feedback's), off line (a solve takes no time), a solve every --every seconds for the
// sample --lead ahead from that state predicted through what will be sent until then; the truth
// with the push(es), the closed loop's model with the truth's strings (an exact calibration).  Against open loop on the same truth: the mean over the
// named points of each one's rms distance from the plan's prediction.
int predictiveBound(int seeds, const std::vector<std::string>& plans, const Perturbation& what,
                    const ClosedLoopOptionsPatch& patch) {
  using namespace marionette::executor;
  std::printf(
      "| plan | seed | open: mean point rms (m) | mpc on the true state | mpc / open | "
      "solves | kept warm | shorter step |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (const std::string& path : plans) {
    const Playback perf = loadPlanFile(path, nullptr);
    const Model& pm = *perf.model;
    const int S = static_cast<int>(perf.inputs.values.rows()), nd = pm.nd(), nk = pm.nk();
    const int P = static_cast<int>(pm.points.size());
    // Whole ticks, as the closed loop counts them (--lead 0: none).
    const ClosedLoopOptions defaults = predictiveDefaults();
    auto ticks = [&](double s) { return static_cast<int>(std::ceil(s * perf.rate_hz - 1e-9)); };
    const int lead = ticks(patch.lead_s >= 0 ? patch.lead_s : defaults.solve_lead_s);
    const int every =
        std::max(1, ticks(patch.every_s > 0 ? patch.every_s : defaults.solve_period_s));
    IntegratorOptions io;
    io.dt_s = 1.0 / perf.rate_hz;
    // The plan's points, where it predicts them.
    DynamicsData pd(pm);
    Eigen::MatrixXd planned(S, 3 * P);
    for (int k = 0; k < S; ++k) {
      forwardKinematics(pm, pd,
                        pm.configuration(perf.predicted_q.row(k).transpose(),
                                         perf.inputs.values.row(k).transpose()));
      for (int p = 0; p < P; ++p)
        planned.block(k, 3 * p, 1, 3) =
            pointPosition(pd, pm.points[p].frame, pm.points[p].position_m).transpose();
    }
    for (int s = 0; s < seeds; ++s) {
      const ModelPtr truth = perturbedTruth(pm, 100 + static_cast<unsigned>(s), what);
      auto model = std::make_shared<Model>(pm);
      model->strings = truth->strings;
      VariationalIntegrator vm(model, io), vt(truth, io);
      // The reference: the plan's inputs on the closed loop's model, from its rest.
      const std::vector<State> reference = simulated(
          vm,
          vm.stateFromVelocity(computeRestPose(model, perf.inputs.values.row(0).transpose()).q,
                               Eigen::VectorXd::Zero(nd), perf.inputs.values.row(0).transpose()),
          perf.inputs.values);
      PredictiveOptions options = predictiveOptions(patch);
      options.point_targets_m = planned.topRows(static_cast<Eigen::Index>(reference.size()));
      const PredictiveController mpc(model, reference, perf.rate_hz, options);
      const int R = static_cast<int>(reference.size());
      double mean_rms[2] = {0, 0};
      long solves = 0, kept = 0, shorter = 0;
      DynamicsData td(*truth);
      for (int closed = 0; closed < 2; ++closed) {
        State x =
            vt.stateFromVelocity(computeRestPose(truth, perf.inputs.values.row(0).transpose()).q,
                                 Eigen::VectorXd::Zero(nd), perf.inputs.values.row(0).transpose());
        State next = x;
        Eigen::VectorXd q_prev = x.q, rho_prev = x.rho;
        // The rows sent (the plan's, corrected); past the current sample, those the solves
        // made so far will send.
        Eigen::MatrixXd sent = perf.inputs.values;
        std::size_t pushes_done = 0;
        Eigen::VectorXd square = Eigen::VectorXd::Zero(P);
        int i = 1;
        for (; i < R; ++i) {
          const int at = i - 1;  // the state is at sample i - 1; the inputs sent at sample i
          const int t = at + lead;
          if (closed && at >= 2 && at % every == 0 && t < R - 2) {
            State seen = seenByModel(vm, x, q_prev, rho_prev, perf.rate_hz);
            bool predicted = true;  // through the rows that will be sent until t
            for (int k = at + 1; k <= t && predicted; ++k) {
              State ahead = vm.makeState();
              predicted = vm.step(seen, sent.row(k).transpose(), ahead) == StepStatus::Ok;
              seen = ahead;
            }
            if (predicted) {
              Eigen::MatrixXd before(2, nk);
              before << sent.row(t - 1), sent.row(t - 2);
              const int H = std::min<int>(mpc.horizonSteps(), R - 1 - t);
              const PredictiveSolve solve = mpc.solve(t, seen, before, sent.middleRows(t, H + 1));
              ++solves;
              kept += solve.kept_warm;
              shorter += solve.step_share > 0 && solve.step_share < 1;
              if (!solve.failed) {
                const Eigen::Index n = std::min<Eigen::Index>(solve.inputs.rows(), R - t) - 1;
                sent.middleRows(t + 1, n) = solve.inputs.middleRows(1, n);
              }
            }
          }
          q_prev = x.q;
          rho_prev = x.rho;
          if (vt.step(x, sent.row(i).transpose(), next) != StepStatus::Ok) break;
          std::swap(x, next);
          while (pushes_done < patch.pushes.size() &&
                 patch.pushes[pushes_done].at_s <= i / perf.rate_hz + 1e-9) {
            const auto& push = patch.pushes[pushes_done++];
            Eigen::Vector3d given;
            x.p += pointImpulse(*truth, x.q, x.rho, truth->pointIndex(push.point),
                                push.point_delta_mps, given);
          }
          forwardKinematics(*truth, td, truth->configuration(x.q, x.rho));
          for (int p = 0; p < P; ++p)
            square[p] += (pointPosition(td, truth->points[p].frame, truth->points[p].position_m) -
                          planned.block(i, 3 * p, 1, 3).transpose())
                             .squaredNorm();
        }
        mean_rms[closed] = (square / static_cast<double>(i - 1)).cwiseSqrt().mean();
      }
      std::printf("| %s | %d | %.4f | %.4f | %.2f | %ld | %ld | %ld |\n", pm.name.c_str(), 100 + s,
                  mean_rms[0], mean_rms[1], mean_rms[1] / mean_rms[0], solves, kept, shorter);
      std::fflush(stdout);
    }
  }
  return 0;
}
}  // namespace

// One MPC window on a plan, from its state at a sample after a kick (each joint's velocity off by
// a draw of 0.3 rad/s or m/s std, the seed's, at 0.6 s, then the plan's inputs for 0.1 s): the
// warm start's re-simulated cost (the plan's inputs) against the solution's after 1 to 100 of the
// solver's iterations, and the solve's time.
int windows(int seeds, const std::vector<std::string>& plans, const ClosedLoopOptionsPatch& patch) {
  using marionette::executor::loadPlanFile;
  using marionette::executor::Playback;
  std::printf("| plan | seed | iterations | warm cost | solved cost | step taken | ms |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
  for (const std::string& path : plans) {
    const Playback perf = loadPlanFile(path, nullptr);
    const Model& m = *perf.model;
    IntegratorOptions io;
    io.dt_s = 1.0 / perf.rate_hz;
    VariationalIntegrator vi(perf.model, io);
    const std::vector<State> reference = simulated(
        vi,
        vi.stateFromVelocity(perf.predicted_q.row(0).transpose(), Eigen::VectorXd::Zero(m.nd()),
                             perf.inputs.values.row(0).transpose()),
        perf.inputs.values);
    PredictiveOptions options = predictiveOptions(patch);
    const int kick = static_cast<int>(std::lround(0.6 * perf.rate_hz));
    const int at = kick + static_cast<int>(std::lround(0.1 * perf.rate_hz));
    for (int s = 0; s < seeds; ++s) {
      std::mt19937 rng(100 + s);
      std::normal_distribution<double> draw(0.0, 0.3);
      State pushed = reference[static_cast<std::size_t>(kick)];
      DynamicsData d(m);
      const Eigen::VectorXd q = m.configuration(pushed.q, pushed.rho);
      forwardKinematics(m, d, q);
      computeLagrangian(m, d, q, Eigen::VectorXd::Zero(m.nd()), LagrangianOrder::MassMatrix);
      Eigen::VectorXd kick_v(m.nd());
      for (int j = 0; j < m.nd(); ++j) kick_v[j] = draw(rng);
      pushed.p += d.M * kick_v;
      bool ok = true;
      for (int k = kick + 1; k <= at && ok; ++k) {
        State next = vi.makeState();
        ok = vi.step(pushed, perf.inputs.values.row(k).transpose(), next) == StepStatus::Ok;
        pushed = next;
      }
      if (!ok) continue;
      Eigen::MatrixXd before(2, m.nk());
      before << perf.inputs.values.row(at - 1), perf.inputs.values.row(at - 2);
      for (int iterations : {1, 3, 10, 30, 100}) {
        options.iterations = iterations;
        const PredictiveController mpc(perf.model, reference, perf.rate_hz, options);
        const auto t0 = std::chrono::steady_clock::now();
        const PredictiveSolve solve = mpc.solve(at, pushed, before, Eigen::MatrixXd());
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        std::printf("| %s | %d | %d | %.4g | %.4g | %s | %.1f |\n", m.name.c_str(), 100 + s,
                    solve.iterations, solve.warm_cost, solve.cost,
                    solve.failed ? "failed" : formatted("%g", solve.step_share).c_str(), ms);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bench_tracking estimation [--seeds N] [--rates HZ,...] [--plan P.json]\n"
                 "       bench_tracking tracking --plan P.json[,P2.json] [--seeds N]\n"
                 "           [--perturb none|masses,strings,damping] [--max-deviation X]\n"
                 "           [--noise M] [--weight NAME=VALUE,...] [--process-noise POS,VEL]\n"
                 "           [--push POINT:T:VX,VY,VZ]... [--calibrate POSES]\n"
                 "           [--calibrate-masses NAME,...] [--feedback mpc [--every S] ...]\n"
                 "       bench_tracking mpc-bound --plan P.json[,...] [--seeds N] [--every S]\n"
                 "           [--lead S] [--perturb ...] [--push ...]\n"
                 "       bench_tracking state-feedback --plan P.json[,...] [--seeds N]\n"
                 "           [--perturb ...] [--weight NAME=VALUE,...]\n";
    return 2;
  }
  const std::string what = argv[1];
  int seeds = 5;
  std::vector<double> rates = {30};
  std::string plan;
  Perturbation perturb;
  ClosedLoopOptionsPatch patch;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--seeds") seeds = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--rates") {
      rates.clear();
      for (const std::string& r : splitCommas(argv[i + 1])) rates.push_back(std::atof(r.c_str()));
    } else if (a == "--plan") plan = argv[i + 1];
    else if (a == "--max-deviation") patch.max_deviation = std::atof(argv[i + 1]);
    else if (a == "--max-correction")
      patch.max_correction = std::atof(argv[i + 1]);
    else if (a == "--exact-strings")
      patch.exact_strings = std::string(argv[i + 1]) == "yes";
    else if (a == "--closed-only")
      patch.closed_only = std::string(argv[i + 1]) == "yes";
    else if (a == "--hold-after-end")
      patch.hold_after_end = std::string(argv[i + 1]) == "yes";
    else if (a == "--calibrate") {
      patch.calibration_poses = std::atoi(argv[i + 1]);
      if (!(patch.calibration_poses >= 1 &&
            patch.calibration_poses <= marionette::executor::kMaxCalibrationPoses)) {
        std::cerr << "bench_tracking: --calibrate: give the poses, 1 to "
                  << marionette::executor::kMaxCalibrationPoses << "\n";
        return 2;
      }
    } else if (a == "--every") {
      patch.every_s = std::atof(argv[i + 1]);
    } else if (a == "--calibrate-masses") {
      patch.calibration_masses = splitCommas(argv[i + 1]);
    } else if (a == "--push") {
      // POINT:T:VX,VY,VZ, as sim:'s push.
      const std::vector<std::string> parts = splitFields(argv[i + 1], ':');
      const std::vector<std::string> v =
          parts.size() == 3 ? splitCommas(parts[2]) : std::vector<std::string>{};
      if (v.size() != 3) {
        std::cerr << "bench_tracking: --push: give POINT:T:VX,VY,VZ\n";
        return 2;
      }
      marionette::executor::SimTruth::Push push;
      push.point = parts[0];
      push.at_s = std::atof(parts[1].c_str());
      push.point_delta_mps = Eigen::Vector3d(std::atof(v[0].c_str()), std::atof(v[1].c_str()),
                                             std::atof(v[2].c_str()));
      patch.pushes.push_back(push);
    } else if (a == "--feedback") {
      const std::string f = argv[i + 1];
      if (f != "lqr" && f != "mpc") {
        std::cerr << "bench_tracking: --feedback: lqr or mpc\n";
        return 2;
      }
      patch.predictive = f == "mpc";
    } else if (a == "--horizon") {
      patch.horizon_s = std::atof(argv[i + 1]);
    } else if (a == "--iterations") {
      patch.iterations = std::atoi(argv[i + 1]);
    } else if (a == "--point-weight") {
      patch.point_weight = std::atof(argv[i + 1]);
    } else if (a == "--lead") {
      patch.lead_s = std::atof(argv[i + 1]);
    } else if (a == "--noise") {
      patch.marker_noise_m = std::atof(argv[i + 1]);
      if (!(patch.marker_noise_m > 0)) {
        std::cerr << "bench_tracking: --noise: give a standard deviation > 0, m\n";
        return 2;
      }
    } else if (a == "--process-noise") {
      const std::vector<std::string> n = splitCommas(argv[i + 1]);
      if (n.size() != 2) {
        std::cerr << "bench_tracking: --process-noise: give POS,VEL\n";
        return 2;
      }
      patch.process_position_std = std::atof(n[0].c_str());
      patch.process_velocity_std = std::atof(n[1].c_str());
      if (!(patch.process_position_std > 0) || !(patch.process_velocity_std > 0)) {
        std::cerr << "bench_tracking: --process-noise: give two numbers > 0\n";
        return 2;
      }
    } else if (a == "--weight") {
      control::LqrWeights names;
      for (const std::string& nv : splitCommas(argv[i + 1])) {
        const std::size_t eq = nv.find('=');
        bool known = false;
        for (const auto& [field, value] : control::weightFields(names))
          known = known || (eq != std::string::npos && nv.substr(0, eq) == field);
        if (!known) {
          std::cerr << "bench_tracking: --weight: '" << nv << "' is not NAME=VALUE of a weight\n";
          return 2;
        }
        patch.weights.emplace_back(nv.substr(0, eq), std::atof(nv.c_str() + eq + 1));
      }
    } else if (a == "--perturb") {
      perturb = Perturbation{false, false, false};
      for (const std::string& p : splitCommas(argv[i + 1])) {
        if (p == "none") continue;
        if (p == "masses") perturb.masses = true;
        else if (p == "strings") perturb.strings = true;
        else if (p == "damping") perturb.damping = true;
        else {
          std::cerr << "bench_tracking: --perturb: unknown '" << p
                    << "' (none, or masses, strings, damping)\n";
          return 2;
        }
      }
    } else {
      std::cerr << "bench_tracking: unknown option " << a << "\n";
      return 2;
    }
  }
  if (what == "estimation") return estimation(seeds, rates, plan);
  const std::vector<std::string> plans =
      plan.empty() ? std::vector<std::string>{} : splitCommas(plan);
  try {
    if (what == "tracking") return tracking(seeds, plans, perturb, patch);
    if (what == "state-feedback") return stateFeedback(seeds, plans, perturb, patch);
    if (what == "windows") return windows(seeds, plans, patch);
    if (what == "mpc-bound") return predictiveBound(seeds, plans, perturb, patch);
  } catch (const std::exception& e) {  // a bad weight, an unreadable plan
    std::cerr << "bench_tracking: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "bench_tracking: unknown part '" << what
            << "' (estimation, tracking, state-feedback, windows)\n";
  return 2;
}
