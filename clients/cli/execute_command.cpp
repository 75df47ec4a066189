// SPDX-License-Identifier: BSD-3-Clause
#include "execute_command.hpp"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "calibrate_command.hpp"
#include "cli_util.hpp"
#include "marionette/common/files.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/executor/closed_loop.hpp"
#include "marionette/executor/executor.hpp"
#include "marionette/executor/tracking_report.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/problem/motion_problem.hpp"
#include "rehearsal.hpp"

namespace marionette::cli {

namespace {

using namespace marionette::executor;

// The run completed, but the feedback asked for never changed a setpoint (docs/executor.md).
constexpr int kFeedbackNeverActed = 9;

std::string vectorText(const Model& m, const Eigen::VectorXd& v) {
  std::ostringstream os;
  for (int j = 0; j < m.nk(); ++j) os << (j ? " " : "") << m.kinematic[j].name << "=" << v[j];
  return os.str();
}

struct FeedbackSetup {
  bool enabled = false;
  ClosedLoopOptions options;
};

// The closed loop's option fields as the flags that set them.
const std::pair<const char*, const char*> kFeedbackFlags[] = {
    {"weights.position", "--q"},
    {"weights.velocity", "--q"},
    {"weights.rig", "--q"},
    {"weights.correction", "--r"},
    {"weights.correction_rate", "--r"},
    {"weights.correction_accel", "--r"},
    {"estimator.position_std", "--process-noise"},
    {"estimator.velocity_std", "--process-noise"},
    {"max_correction", "--max-correction"},
    {"max_deviation", "--max-deviation"},
    {"max_point_deviation_m", "--max-point-deviation"},
    {"predictive.horizon_s", "--horizon"},
    {"predictive.iterations", "--mpc-iterations"},
    {"predictive.point_weight", "--point-weight"},
    {"solve_lead_s", "--solve-lead"},
    {"solve_period_s", "--solve-every"}};

// A closed-loop option's FieldError worded as its flag (e.what() when no flag sets it).
std::string asFlag(const FieldError& e) {
  for (const auto& [field, flag] : kFeedbackFlags)
    if (e.field() == field)
      return std::string(flag) + ": " + e.field().substr(e.field().find('.') + 1) + " " +
             e.problem();
  return e.what();
}

// --feedback and its options; each only with the feedback it tunes.
FeedbackSetup parseFeedback(const Args& a, const Playback& perf, const ScenePtr& scene,
                            const StreamOptions& so, double rate) {
  FeedbackSetup fb;
  const char* closed_only[] = {"--estimator",
                               "--q",
                               "--r",
                               "--process-noise",
                               "--max-correction",
                               "--max-deviation",
                               "--max-point-deviation"};
  const char* predictive_only[] = {"--horizon", "--mpc-iterations", "--solve-lead", "--solve-every",
                                   "--point-weight"};
  if (a.values.count("--feedback")) {
    const std::string f = a.values.at("--feedback");
    if (f != "lqr" && f != "mpc" && f != "none")
      throw std::invalid_argument("--feedback: '" + f + "' (lqr, mpc, or none for open loop)");
    fb.enabled = f != "none";
    if (f == "mpc") fb.options = predictiveDefaults();
  }
  for (const char* flag : closed_only)
    if (a.values.count(flag) && !fb.enabled)
      throw std::invalid_argument(std::string(flag) + ": only with --feedback lqr or mpc");
  for (const char* flag : predictive_only)
    if (a.values.count(flag) && fb.options.feedback != Feedback::Predictive)
      throw std::invalid_argument(std::string(flag) + ": only with --feedback mpc");
  if (!fb.enabled) return fb;
  if (a.values.count("--inputs"))
    throw std::invalid_argument("--feedback: needs a plan file (--plan): its predicted states "
                                "are the reference");
  if (so.rate_scale != 1.0)
    throw std::invalid_argument("--rate-scale: feedback plays the plan at its own speed");
  if (rate != perf.rate_hz)
    throw std::invalid_argument(formatted(
        "--send-rate: feedback runs at the plan's own rate (%g Hz)", perf.rate_hz));
  ClosedLoopOptions& o = fb.options;
  if (a.values.count("--estimator")) {
    try {
      o.estimator.process = control::parseProcessModel(a.values.at("--estimator"));
    } catch (const FieldError& e) {
      throw std::invalid_argument("--estimator: " + e.problem());
    }
  }
  auto numbers = [&](const char* flag, std::size_t min, std::size_t max) {
    std::vector<double> v;
    for (const std::string& t : splitFields(a.values.at(flag), ','))
      v.push_back(parseNumber(flag, t));
    if (v.size() < min || v.size() > max)
      throw std::invalid_argument(std::string(flag) + ": give " + std::to_string(min) +
                                  (min == max ? "" : " to " + std::to_string(max)) +
                                  " comma-separated numbers");
    for (double x : v)
      if (!(x >= 0)) throw std::invalid_argument(std::string(flag) + ": weights are >= 0");
    return v;
  };
  if (a.values.count("--q")) {
    const std::vector<double> q = numbers("--q", 1, 3);
    o.weights.position = q[0];
    if (q.size() > 1) o.weights.velocity = q[1];
    if (q.size() > 2) o.weights.rig = q[2];
  }
  if (a.values.count("--r")) {
    const std::vector<double> r = numbers("--r", 1, 3);
    o.weights.correction = r[0];
    if (!(o.weights.correction > 0)) throw std::invalid_argument("--r: must be > 0");
    if (r.size() > 1) o.weights.correction_rate = r[1];
    if (r.size() > 2) o.weights.correction_accel = r[2];
  }
  if (a.values.count("--process-noise")) {
    const std::vector<double> n = numbers("--process-noise", 2, 2);
    o.estimator.position_std = n[0];
    o.estimator.velocity_std = n[1];
  }
  auto positive = [&](const char* flag, double& out) {
    if (!a.values.count(flag)) return;
    out = parseNumber(flag, a.values.at(flag));
    if (!(out > 0)) throw std::invalid_argument(std::string(flag) + ": must be > 0 (m or rad)");
  };
  positive("--max-correction", o.max_correction);
  positive("--max-deviation", o.max_deviation);
  if (a.values.count("--max-point-deviation"))
    o.max_point_deviation_m =
        parseNumber("--max-point-deviation", a.values.at("--max-point-deviation"));
  if (a.values.count("--horizon"))
    o.predictive.horizon_s = parseNumber("--horizon", a.values.at("--horizon"));
  if (a.values.count("--mpc-iterations")) {
    const double n = parseNumber("--mpc-iterations", a.values.at("--mpc-iterations"));
    if (n != std::floor(n) || !(std::abs(n) < 1e9))
      throw std::invalid_argument("--mpc-iterations: a whole number");
    o.predictive.iterations = static_cast<int>(n);
  }
  if (a.values.count("--solve-lead"))
    o.solve_lead_s = parseNumber("--solve-lead", a.values.at("--solve-lead"));
  if (a.values.count("--solve-every"))
    o.solve_period_s = parseNumber("--solve-every", a.values.at("--solve-every"));
  if (a.values.count("--point-weight"))
    o.predictive.point_weight = parseNumber("--point-weight", a.values.at("--point-weight"));
  // Every option within its range, so that the filter and the gains stay finite.
  try {
    checkClosedLoopOptions(o);
  } catch (const FieldError& e) {
    throw std::invalid_argument(asFlag(e));
  }
  // The estimate is checked against the plan's scene, as the plan was (touching the floor and
  // its own links is no collision): a collision ahead stops the run.
  if (scene) {
    auto checker = std::make_shared<CollisionChecker>(
        std::make_shared<const CollisionModel>(perf.model, scene, problemCollisionOptions()));
    o.collides = [checker](const Eigen::VectorXd& q, std::string& what) {
      const CollisionResult c = checker->inCollision(q);
      if (c.in_collision) what = c.pair.describe();
      return c.in_collision;
    };
  }
  return fb;
}

// The dry run on the plan's stage (rehearsal.hpp): what the puppet would do, printed; false (and
// why, on stderr) when it collides or a step fails.
// The stream re-simulated on the plan's stage (rehearse), or nothing, said, when it cannot be.
std::optional<Rehearsal> rehearsal(const Playback& perf, const ScenePtr& scene,
                                   const Stream& stream, double rate_scale) {
  try {
    return rehearse(perf, stream, scene, rate_scale);
  } catch (const std::exception& e) {
    std::cerr << "marionette execute: refused, nothing was sent: the stream's re-simulation on "
              << perf.scene << " failed: " << e.what() << "\n";
    return std::nullopt;
  }
}

// --dry-run: whether the rehearsal is collision-free, said either way.
bool collisionFree(const Playback& perf, const Rehearsal& r) {
  const CheckedSimulationReport& c = r.report;
  if (c.first_collision >= 0) {
    std::cerr << formatted(
        "marionette execute: refused, nothing was sent: re-simulated on %s, "
        "the stream collides at t=%.2f s (%s)\n",
        perf.scene.c_str(), c.first_collision_t_s, c.first_collision_pair.describe().c_str());
    return false;
  }
  std::cout << formatted(
      "  re-simulated on %s (%.2f s from the plan's start): no collision; "
      "clearance to the stage %.4f m, to anything %.4f m",
      perf.scene.c_str(), r.duration_s, c.min_stage_clearance_m, c.min_clearance_m);
  if (!r.touched.empty()) {
    std::cout << "; touching " << r.touched.size() << " pair(s): " << r.touched.front();
    for (std::size_t i = 1; i < std::min<std::size_t>(r.touched.size(), 4); ++i)
      std::cout << ", " << r.touched[i];
    if (r.touched.size() > 4) std::cout << ", ...";
  }
  std::cout << "\n";
  return true;
}

// --rate-scale on a plan with predicted states: whether the puppet played at that speed still
// does what the plan predicts (within kRateScaleTolerance_m), said either way.
constexpr double kRateScaleTolerance_m = 0.01;
bool sameShowAtRateScale(const Rehearsal& r, double rate_scale) {
  if (r.deviation_m > kRateScaleTolerance_m) {
    std::cerr << formatted(
        "marionette execute: refused, nothing was sent: --rate-scale %g: re-simulated at that "
        "speed, %s would be %.3f m from the plan's motion (%.2f s into the plan; tolerance "
        "%.2f m): its dynamics differ at that speed; plan it at that speed instead "
        "(a performance: perform --speed %g)\n",
        rate_scale, r.deviation_point.c_str(), r.deviation_m, r.deviation_at_s,
        kRateScaleTolerance_m, rate_scale);
    return false;
  }
  std::cout << formatted(
      "  --rate-scale %g: re-simulated at that speed, every named point within %.3g m of the "
      "plan's motion\n",
      rate_scale, r.deviation_m);
  return true;
}

}  // namespace

int cmdExecute(int argc, char** argv) {
  std::vector<std::string> value_flags{"--plan",
                                       "--inputs",
                                       "--model",
                                       "--rig",
                                       "--rig-config",
                                       "--rate-scale",
                                       "--send-rate",
                                       "--loops",
                                       "--hold",
                                       "--log",
                                       "--settle",
                                       "--report",
                                       "--feedback",
                                       "--estimator",
                                       "--q",
                                       "--r",
                                       "--process-noise",
                                       "--max-correction",
                                       "--max-deviation",
                                       "--max-point-deviation",
                                       "--horizon",
                                       "--mpc-iterations",
                                       "--solve-lead",
                                       "--solve-every",
                                       "--point-weight",
                                       "--scene"};
  for (const std::string& f : rigCalibrationFlags("--calibration-")) value_flags.push_back(f);
  for (const std::string& f : linkFlags()) value_flags.push_back(f);
  const Args a = parseArgs(argc, argv, 2, value_flags, {"--loop", "--dry-run", "--calibrate"});
  if (a.values.count("--plan") == a.values.count("--inputs"))
    throw std::invalid_argument("give one of --plan plan.json or --inputs FILE.csv");
  // Outputs are opened before anything moves: a run is not repeated for a report it lost.
  const std::unique_ptr<OutputFile> report_file = openOutput(a, "--report");
  checkOutput(a, "--log");
  if (!a.values.count("--rig") && !a.switches.count("--dry-run"))
    throw std::invalid_argument(
        "--rig: give the rig (sim:, serial:/dev/ttyX?baud=N, "
        "udp:HOST:PORT), or --dry-run to only check the plan");
  ModelPtr model = a.values.count("--model") ? loadModel(a.values.at("--model")) : nullptr;
  StreamOptions so;
  if (a.values.count("--rate-scale"))
    so.rate_scale = parseNumber("--rate-scale", a.values.at("--rate-scale"));
  if (a.values.count("--send-rate"))
    so.send_rate_hz = parseNumber("--send-rate", a.values.at("--send-rate"));
  if (a.values.count("--settle")) so.settle_s = parseNumber("--settle", a.values.at("--settle"));
  if (!(so.settle_s >= 0 && so.settle_s <= 60))
    throw std::invalid_argument("--settle: must be in [0, 60] s");
  if (a.values.count("--hold")) so.hold = splitCommas(a.values.at("--hold"));

  const Playback perf = a.values.count("--plan")
                               ? loadPlanFile(a.values.at("--plan"), model)
                               : loadInputsCsv(a.values.at("--inputs"), model, so.send_rate_hz);
  const Model& m = *perf.model;
  const double rate = so.send_rate_hz > 0 ? so.send_rate_hz : perf.rate_hz;

  // The operator's link options: the run's and the calibration's frames all go out under them.
  LinkOptions link = parseLinkOptions(a);
  ExecuteOptions eo;
  eo.loops = a.switches.count("--loop") ? 0 : 1;
  if (a.values.count("--loops")) {
    const double n = parseNumber("--loops", a.values.at("--loops"));
    if (!(n >= 1 && n == std::floor(n))) throw std::invalid_argument("--loops: a count >= 1");
    eo.loops = static_cast<int>(n);
  }
  // The plan's stage: its built-in scene by name, or the file --scene gives (of that name; any
  // scene for inputs from a CSV, which name none).
  ScenePtr scene;
  if (a.values.count("--scene")) {
    scene = loadScene(a.values.at("--scene"));
    if (!perf.scene.empty() && scene->name != perf.scene)
      throw std::invalid_argument("--scene: " + a.values.at("--scene") + " is the scene '" +
                                  scene->name + "', the plan's is '" + perf.scene + "'");
  } else if (!perf.scene.empty()) {
    const std::vector<std::string> builtin = builtinSceneNames();
    if (std::find(builtin.begin(), builtin.end(), perf.scene) == builtin.end())
      throw std::invalid_argument("--scene: the plan's scene '" + perf.scene +
                                  "' is not a built-in one: give its file");
    scene = loadScene(perf.scene);
  }
  FeedbackSetup fb = parseFeedback(a, perf, scene, so, rate);
  // --calibrate: before the run, on the rig (calibrate_command.hpp); the fit is the feedback's.
  const bool calibrate = a.switches.count("--calibrate") > 0;
  for (const std::string& f : rigCalibrationFlags("--calibration-"))
    if (a.values.count(f) && !calibrate) throw std::invalid_argument(f + ": only with --calibrate");
  if (calibrate && !fb.enabled)
    throw std::invalid_argument(
        "--calibrate: the calibrated puppet is the feedback's model; give "
        "--feedback lqr or mpc");
  if (calibrate && a.switches.count("--dry-run"))
    throw std::invalid_argument("--calibrate: moves the rig; not with --dry-run");
  RigCalibrationOptions calibration_options =
      calibrate ? parseRigCalibration(a, "--calibration-", perf.model, scene, rate)
                : RigCalibrationOptions{};
  calibration_options.held = so.hold;  // held through the calibration too

  std::cout << "execute: " << perf.source << " (" << m.name << ", " << perf.duration_s
            << " s, sent at " << rate << " Hz";
  if (so.rate_scale != 1.0) std::cout << ", played at x" << so.rate_scale << " speed";
  std::cout << ")\n";

  // The rig, and where it is now.
  std::unique_ptr<RigDriver> rig;
  Eigen::VectorXd now;
  if (a.values.count("--rig")) {
    const std::string uri = a.values.at("--rig");
    RigConfig config = RigConfig::identity(m);
    if (a.values.count("--rig-config"))
      config = RigConfig::load(a.values.at("--rig-config"), m);
    else if (uri.rfind("serial:", 0) == 0 || uri.rfind("udp:", 0) == 0)
      throw std::invalid_argument(
          "--rig-config: a hardware rig needs its channel map (YAML: "
          "variable -> channel, scale, offset, unit)");
    try {
      rig = openRig(uri, perf.model, config, rate);
      now = rig->readSetpoints();
    } catch (const LinkError& e) {
      std::cerr << "marionette execute: " << e.what() << "; nothing was sent\n";
      return 4;
    }
    std::cout << "  rig " << rig->uri() << " is at " << vectorText(m, now) << "\n";
  } else {
    now = perf.inputs.at(0.0);
    std::cout << "  no rig (--dry-run): taking the rig to be at the performance's start\n";
  }

  if (fb.enabled && rig && !rig->sensing()) {
    std::cerr << "marionette execute: refused, nothing was sent: --feedback: the rig " << rig->uri()
              << " declares no measurements (give the rig file a sensing: section, or "
                 "sim:?noise=0.002&rate=30)\n";
    return 2;
  }
  const Stream stream = buildStream(perf, now, so);
  const std::vector<std::string> problems = validateStream(m, stream);
  if (!problems.empty()) {
    std::cerr << "marionette execute: refused, nothing was sent: the stream at " << rate << " Hz";
    if (so.rate_scale != 1.0) std::cerr << " (after --rate-scale " << so.rate_scale << ")";
    std::cerr << " breaks the rig's limits:\n";
    for (const auto& p : problems) std::cerr << "  " << p << "\n";
    return 2;
  }
  // A simulated push after the run's last frame would never be applied.
  if (auto* sim = dynamic_cast<SimRig*>(rig.get()); sim && eo.loops == 1) {
    const double run_s = static_cast<double>(stream.rows.rows() - 1) / rate;
    for (const SimTruth::Push& p : sim->pushes())
      if (p.at_s > run_s + 1e-9) {
        std::cerr << formatted("marionette execute: refused, nothing was sent: --rig: a push at "
                               "%g s comes after the run's last frame (%.2f s): it would never "
                               "be applied\n",
                               p.at_s, run_s);
        return 2;
      }
  }
  const int ramp =
      static_cast<int>(std::count(stream.phase.begin(), stream.phase.end(), Phase::Ramp));
  const int settle =
      static_cast<int>(std::count(stream.phase.begin(), stream.phase.end(), Phase::Settle));
  std::cout << formatted(
      "  validated: ramp-in %.2f s, settle %.2f s, play %.2f s (%d rows), "
      "within every range, speed and acceleration limit\n",
      ramp / rate, settle / rate, (stream.play_rows - 1) / rate,
      static_cast<int>(stream.rows.rows()));
  // Feedback: the gains and the estimator, before anything moves (on the model; with
  // --calibrate, again on the calibrated puppet after the calibration).
  std::unique_ptr<ClosedLoop> loop;
  auto makeLoop = [&]() -> std::string {
    try {
      loop = std::make_unique<ClosedLoop>(perf, stream, *rig->sensing(), so.hold, fb.options);
    } catch (const FieldError& e) {
      return asFlag(e);
    } catch (const SimulationError& e) {
      return perf.source + ": " + e.what();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  if (fb.enabled && rig) {
    if (const std::string why = makeLoop(); !why.empty()) {
      std::cerr << "marionette execute: refused, nothing was sent: --feedback: " << why << "\n";
      return 2;
    }
  }
  // The stream re-simulated on the plan's stage: for a dry run, and for a plan played at another
  // speed than it was planned for (its predicted motion then says what it should do).
  const bool dry_run = a.switches.count("--dry-run") > 0;
  const bool rescaled = so.rate_scale != 1.0 && perf.predicted_q.rows() > 0;
  if (scene && (dry_run || rescaled)) {
    const std::optional<Rehearsal> r = rehearsal(perf, scene, stream, so.rate_scale);
    if (!r || (dry_run && !collisionFree(perf, *r))) return 2;
    if (rescaled && !sameShowAtRateScale(*r, so.rate_scale)) return 2;
  }
  if (dry_run) {
    std::cout << "  dry run: nothing was sent\n";
    return 0;
  }

  std::unique_ptr<CommandLog> log;
  if (a.values.count("--log")) log = std::make_unique<CommandLog>(a.values.at("--log"), m);
  link.log = log.get();
  link.stop_requested = installStopHandlers();
  std::optional<RigCalibration> calibration;
  if (calibrate) {
    int status = 0;
    calibration =
        runRigCalibration(*rig, perf.model, calibration_options, link, "execute", &status);
    if (!calibration) return status;
    // It ends holding the rig's start, where the stream begins.
    const Eigen::VectorXd& held = calibration->moves.last_sent;
    const std::string after = "marionette execute: after the calibration's moves (the rig holds ";
    if (held.size() != now.size() || (held - now).cwiseAbs().maxCoeff() > 1e-9) {
      std::cerr << after << "its last pose): it did not end at the rig's start\n";
      return 1;
    }
    fb.options.calibrated = calibration->fit.model;
    fb.options.rig_clock_start = calibration->first_frame_sent;
    fb.options.start_q = calibration->fit.rest_q.back();
    if (const std::string why = makeLoop(); !why.empty()) {
      std::cerr << after << "its start): --feedback on the calibrated puppet: " << why << "\n";
      return 1;
    }
  }
  if (loop) {
    const Sensing& sensing = *rig->sensing();
    const std::string controller =
        loop->feedback() == Feedback::Predictive
            ? formatted(
                  "MPC on the transcription along the plan%s (horizon %g s, %d "
                  "iterations a solve, one every %g s, each for the sample %g s ahead)",
                  calibration ? " re-simulated on the calibrated puppet" : "",
                  fb.options.predictive.horizon_s, fb.options.predictive.iterations,
                  loop->solvePeriodTicks() / rate, loop->solveLeadTicks() / rate)
            : formatted("LQR along the plan%s (%zu gains, %s)",
                        calibration ? " re-simulated on the calibrated puppet" : "",
                        loop->gains().K.size(),
                        loop->gainsFromPlan() ? "the plan's" : "computed for these weights");
    std::cout << formatted(
        "  feedback: %s, %s estimator on %d measured values at %g Hz (latency "
        "%g s)\n",
        controller.c_str(), toString(fb.options.estimator.process),
        static_cast<int>(sensing.names().size()), sensing.rate_hz, sensing.latency_s);
  }

  static_cast<LinkOptions&>(eo) = link;
  eo.closed_loop = loop.get();
  rig->markRunStart();
  const ExecuteReport r = execute(*rig, stream, eo);

  std::cout << formatted("  sent %ld frames in %.2f s%s; missed ticks %ld (longest run %d)",
                         r.frames_sent, r.elapsed_s,
                         rig->simulatedClock() ? " on the simulated clock" : "", r.missed_ticks,
                         r.longest_miss_run);
  if (rig->acknowledges())
    std::cout << formatted("; acks %ld, lost %ld, corrupt %ld, refused %ld", r.acks, r.acks_lost,
                           r.acks_corrupt, r.naks);
  std::cout << "\n";
  if (!r.late_ms.empty() && !rig->simulatedClock())  // (on it every frame is on time)
    std::cout << formatted("  send time after deadline: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
                           percentile(r.late_ms, 0.5), percentile(r.late_ms, 0.99),
                           *std::max_element(r.late_ms.begin(), r.late_ms.end()));
  if (!r.send_priority.empty() && !rig->simulatedClock())
    std::cout << "  send loop priority: " << r.send_priority << "\n";
  if (loop) {
    const ClosedLoopStats& st = loop->stats();
    std::cout << formatted(
        "  feedback: measurements %ld (fused %ld, late %ld, corrupt %ld, ahead %ld, repeated "
        "%ld); largest correction %.3g, clamped %ld; cycle p50 %.3f ms, p99 %.3f ms\n",
        st.measurements, st.fused, st.late, st.corrupt, st.ahead, st.repeated, st.max_correction,
        st.clamped, percentile(st.cycle_ms, 0.5), percentile(st.cycle_ms, 0.99));
    if (const PredictiveStats* ps = loop->predictiveStats()) {
      double iterations = 0.0;
      for (int n : ps->iterations) iterations += n;
      std::cout << formatted(
          "  mpc: %ld solves started (%ld skipped), %ld used, %ld late, %ld failed, %ld kept the "
          "warm start, %ld a shorter step; %.1f iterations a solve; solve p50 %.1f ms, p99 %.1f "
          "ms\n",
          ps->started, ps->skipped, ps->used, ps->late, ps->failed, ps->kept_warm, ps->shortened,
          ps->iterations.empty() ? 0.0 : iterations / static_cast<double>(ps->iterations.size()),
          percentile(ps->solve_ms, 0.5), percentile(ps->solve_ms, 0.99));
    }
  }
  bool outputs_kept = true;
  if (report_file) {
    TrackingReport tr = buildTrackingReport(
        perf, stream, r, *rig, loop.get(), fb.enabled ? toString(fb.options.feedback) : "none",
        fb.enabled ? toString(fb.options.estimator.process) : "");
    tr.calibration = calibration;
    outputs_kept = commitAfterMotion(*report_file, toJson(tr), "--report", "execute");
    if (outputs_kept && !tr.points.empty()) {
      double worst_goal = 0.0;
      std::string at;
      for (const auto& p : tr.points)
        if (p.at_goal_m > worst_goal) worst_goal = p.at_goal_m, at = p.name;
      std::cout << formatted(
          "  report %s: joints rms %.3g (from the %s), worst point at the end %s %.3g m\n",
          a.values.at("--report").c_str(), tr.joints_rms, tr.motion_from.c_str(), at.c_str(),
          worst_goal);
    } else if (outputs_kept) {
      std::cout << "  report " << a.values.at("--report") << " (the puppet's motion is unknown: "
                << "no truth, no estimate)\n";
    }
  }
  auto* sim = dynamic_cast<SimRig*>(rig.get());
  if (sim && sim->pushesApplied() < sim->pushes().size())
    std::cout << formatted("  %zu of %zu push(es) not applied: the run ended before their time\n",
                           sim->pushes().size() - sim->pushesApplied(), sim->pushes().size());
  // The simulated rig measured the puppet: how closely it followed the plan's prediction (a
  // missed tick held an input one period longer than planned: then the motion differs, and
  // that is said instead).
  const bool comparable = sim && !loop && r.reason == StopReason::Completed &&
                          perf.predicted_q.rows() > 0 && so.rate_scale == 1.0 &&
                          rate == perf.rate_hz && so.hold.empty();
  if (comparable && r.missed_ticks > 0)
    std::cout << "  the simulated puppet is not compared with the plan's predicted states: "
              << r.missed_ticks << " missed tick(s) held an input longer than planned\n";
  if (comparable && r.missed_ticks == 0) {
    // Every pass (--loops N).
    const auto& q = sim->measuredQ();
    const int per_pass = std::min<int>(static_cast<int>(perf.predicted_q.rows()), stream.play_rows);
    std::vector<double> dev;
    for (long pass = 0; stream.playFrame(pass, per_pass) <= r.frames_sent; ++pass) {
      dev.push_back(0.0);
      for (int i = 0; i < per_pass; ++i) {
        const long tick = sim->frameTicks()[static_cast<std::size_t>(stream.playFrame(pass, i))];
        dev.back() = std::max(
            dev.back(), (q[static_cast<std::size_t>(tick)] - perf.predicted_q.row(i).transpose())
                            .cwiseAbs()
                            .maxCoeff());
      }
    }
    std::cout << formatted(
        "  the simulated puppet followed the plan's predicted states within "
        "%.3g (m or rad, max over %d samples)",
        dev.empty() ? 0.0 : *std::max_element(dev.begin(), dev.end()), per_pass);
    if (dev.size() > 1) {
      std::cout << " in each of " << dev.size() << " passes:";
      for (double d : dev) std::cout << formatted(" %.3g", d);
    }
    std::cout << "\n";
  }
  if (r.reason == StopReason::Completed) {
    std::cout << "  " << r.message << "\n";
  } else {
    std::cerr << "marionette execute: " << toString(r.reason) << ": " << r.message << "\n";
    if (r.last_sent.size()) std::cerr << "  holding " << vectorText(m, r.last_sent) << "\n";
  }
  // A run that completed but lost an output says so in its status; a stop's status says more.
  if (r.reason == StopReason::Completed && !outputs_kept) return kOutputLostAfterMotion;
  // The MPC asked for, and none of its solutions sent: the run was open loop, and says so.
  const PredictiveStats* ps = loop ? loop->predictiveStats() : nullptr;
  if (r.reason == StopReason::Completed && ps && ps->used == 0) {
    std::cerr << formatted(
        "marionette execute: the MPC never acted: %ld solve(s) started, %ld skipped (the worker "
        "busy), %ld late, %ld failed, none used; every setpoint sent was the plan's (open "
        "loop)\n",
        ps->started, ps->skipped, ps->late, ps->failed);
    return kFeedbackNeverActed;
  }
  return exitStatus(r.reason);
}

}  // namespace marionette::cli
