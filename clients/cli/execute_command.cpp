#include "execute_command.hpp"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli_util.hpp"
#include "marionette/executor/executor.hpp"
#include "marionette/models/model_io.hpp"

namespace marionette::cli {

namespace {

using namespace marionette::executor;

std::atomic<bool> g_stop{false};
extern "C" void onStopSignal(int) {
  g_stop.store(true);
}

void installStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: the deadline sleep wakes at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

double percentileOf(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

std::string vectorText(const Model& m, const Eigen::VectorXd& v) {
  std::ostringstream os;
  for (int j = 0; j < m.nk(); ++j) os << (j ? " " : "") << m.kinematic[j].name << "=" << v[j];
  return os.str();
}

}  // namespace

int cmdExecute(int argc, char** argv) {
  const Args a = parseArgs(argc, argv, 2,
                           {"--plan", "--inputs", "--model", "--rig", "--rig-config",
                            "--rate-scale", "--send-rate", "--loops", "--hold", "--log",
                            "--max-misses", "--settle", "--ack-timeout", "--max-lost-acks"},
                           {"--loop", "--dry-run"});
  if (a.values.count("--plan") == a.values.count("--inputs"))
    throw std::invalid_argument("give one of --plan plan.json or --inputs FILE.csv");
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

  const Performance perf = a.values.count("--plan")
                               ? loadPlanFile(a.values.at("--plan"), model)
                               : loadInputsCsv(a.values.at("--inputs"), model, so.send_rate_hz);
  const Model& m = *perf.model;
  const double rate = so.send_rate_hz > 0 ? so.send_rate_hz : perf.rate_hz;

  ExecuteOptions eo;
  eo.loops = a.switches.count("--loop") ? 0 : 1;
  if (a.values.count("--loops")) {
    const double n = parseNumber("--loops", a.values.at("--loops"));
    if (!(n >= 1 && n == std::floor(n))) throw std::invalid_argument("--loops: a count >= 1");
    eo.loops = static_cast<int>(n);
  }
  if (a.values.count("--max-misses")) {
    const double n = parseNumber("--max-misses", a.values.at("--max-misses"));
    if (!(n >= 0 && n == std::floor(n))) throw std::invalid_argument("--max-misses: a count >= 0");
    eo.max_consecutive_misses = static_cast<int>(n);
  }
  if (a.values.count("--max-lost-acks")) {
    const double n = parseNumber("--max-lost-acks", a.values.at("--max-lost-acks"));
    if (!(n >= 0 && n == std::floor(n)))
      throw std::invalid_argument("--max-lost-acks: a count >= 0");
    eo.max_consecutive_lost_acks = static_cast<int>(n);
  }
  if (a.values.count("--ack-timeout"))
    eo.ack_timeout_s = parseNumber("--ack-timeout", a.values.at("--ack-timeout"));

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

  const Stream stream = buildStream(perf, now, so);
  const std::vector<std::string> problems = validateStream(m, stream);
  if (!problems.empty()) {
    std::cerr << "marionette execute: refused, nothing was sent: the stream at " << rate << " Hz";
    if (so.rate_scale != 1.0) std::cerr << " (after --rate-scale " << so.rate_scale << ")";
    std::cerr << " breaks the rig's limits:\n";
    for (const auto& p : problems) std::cerr << "  " << p << "\n";
    return 2;
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
  if (a.switches.count("--dry-run")) {
    std::cout << "  dry run: nothing was sent\n";
    return 0;
  }

  std::unique_ptr<CommandLog> log;
  if (a.values.count("--log")) log = std::make_unique<CommandLog>(a.values.at("--log"), m);
  eo.log = log.get();
  eo.stop_requested = &g_stop;
  installStopHandlers();
  const ExecuteReport r = execute(*rig, stream, eo);

  std::cout << formatted("  sent %ld frames in %.2f s; missed ticks %ld (longest run %d)",
                         r.frames_sent, r.elapsed_s, r.missed_ticks, r.longest_miss_run);
  if (rig->acknowledges())
    std::cout << formatted("; acks %ld, lost %ld, corrupt %ld, refused %ld", r.acks, r.acks_lost,
                           r.acks_corrupt, r.naks);
  std::cout << "\n";
  if (!r.late_ms.empty())
    std::cout << formatted("  send time after deadline: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
                           percentileOf(r.late_ms, 0.5), percentileOf(r.late_ms, 0.99),
                           *std::max_element(r.late_ms.begin(), r.late_ms.end()));
  // The simulated rig measured the puppet: how closely it followed the plan's prediction.
  if (auto* sim = dynamic_cast<SimRig*>(rig.get());
      sim && r.reason == StopReason::Completed && perf.predicted_q.rows() > 0 &&
      so.rate_scale == 1.0 && rate == perf.rate_hz && so.hold.empty() && r.missed_ticks == 0) {
    const auto& q = sim->measuredQ();
    const long first = sim->frameTicks()[stream.play_begin];
    double dev = 0.0;
    for (int i = 0; i < perf.predicted_q.rows() && first + i < static_cast<long>(q.size()); ++i)
      dev =
          std::max(dev, (q[first + i] - perf.predicted_q.row(i).transpose()).cwiseAbs().maxCoeff());
    std::cout << formatted(
        "  the simulated puppet followed the plan's predicted states within "
        "%.3g (m or rad, max over %d samples)\n",
        dev, static_cast<int>(perf.predicted_q.rows()));
  }
  if (r.reason == StopReason::Completed) {
    std::cout << "  " << r.message << "\n";
  } else {
    std::cerr << "marionette execute: " << toString(r.reason) << ": " << r.message << "\n";
    if (r.last_sent.size()) std::cerr << "  holding " << vectorText(m, r.last_sent) << "\n";
  }
  return exitStatus(r.reason);
}

}  // namespace marionette::cli
