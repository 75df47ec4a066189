// SPDX-License-Identifier: BSD-3-Clause
// Executor send-time jitter: the executor streams a constant performance of the planar arm's
// rig to a UDP receiver on loopback (which ACKs every frame, like a rig) at 50, 100 and 200 Hz
// and reports, per rate, how late each frame left after its deadline (p50, p99, max), the
// missed ticks and the acks.
//
//   build/bin/bench_executor [--seconds 60] [--rates 50,100,200]
//
// Target: p99 <= 1 ms at 100 Hz.

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "marionette/executor/executor.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/model_io.hpp"
#include "support/udp_responder.hpp"

namespace {

using namespace marionette;
using namespace marionette::executor;

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

// A rig on loopback: answers GET with `setpoints` and ACKs every SET.
std::function<std::string(const std::string&)> loopbackRig(const RigConfig& rig,
                                                           const Eigen::VectorXd& setpoints) {
  return [rig, setpoints](const std::string& message) -> std::string {
    WireFrame f;
    if (decodeFrame(message, f) != DecodeResult::Ok) return "";
    return f.type == "GET" ? encodeFrame("POS", f.seq, encodeSetpoints(rig, setpoints))
                           : encodeFrame("ACK", f.seq);
  };
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 60.0;
  std::vector<double> rates = {50, 100, 200};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--seconds") {
      seconds = std::max(1.0, std::atof(argv[i + 1]));
    } else if (a == "--rates") {
      rates.clear();
      for (const std::string& r : splitCommas(argv[i + 1])) rates.push_back(std::atof(r.c_str()));
    } else {
      std::cerr << "usage: bench_executor [--seconds S] [--rates HZ,...]\n";
      return 2;
    }
  }
  const ModelPtr arm = loadModel("planar-arm");
  const RigConfig rig = RigConfig::identity(*arm);
  std::printf(
      "| rate (Hz) | frames | late p50 (ms) | p99 (ms) | max (ms) | missed ticks | acks | "
      "acks lost |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (double rate : rates) {
    test::UdpResponder device(loopbackRig(rig, arm->defaultInputs()));
    Playback perf;
    perf.model = arm;
    perf.rate_hz = rate;
    perf.duration_s = seconds;
    perf.inputs = InputSchedule::constant(*arm);
    perf.source = "(constant)";
    const auto driver = openRig(device.uri(), arm, rig, rate);
    const Stream s = buildStream(perf, driver->readSetpoints(), {});
    const ExecuteReport r = execute(*driver, s, {});
    if (r.reason != StopReason::Completed) std::printf("stopped: %s\n", r.message.c_str());
    std::printf("| %.0f | %ld | %.3f | %.3f | %.3f | %ld | %ld | %ld |\n", rate, r.frames_sent,
                percentile(r.late_ms, 0.5), percentile(r.late_ms, 0.99),
                *std::max_element(r.late_ms.begin(), r.late_ms.end()), r.missed_ticks, r.acks,
                r.acks_lost);
    std::fflush(stdout);
  }
  return 0;
}
