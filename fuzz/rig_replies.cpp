// SPDX-License-Identifier: BSD-3-Clause
// A rig's replies as the executor meets them, from a hostile rig: the first line answers GET
// (POS), and the stream is built from where it says the rig is and validated; every further
// line arrives before one frame (ACK, NAK, MEA or anything else, read as the serial and UDP
// drivers read it), while the closed loop fuses the measurements and corrects the plan's rows.
// Beyond no crash: every frame the loop hands over keeps the limits from the two before it
// (frameProblem), or the loop stops the run -- what execute() would otherwise refuse to send.
#include <sstream>

#include "fuzz_target.hpp"
#include "marionette/executor/closed_loop.hpp"
#include "marionette/executor/executor.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/planner/planner.hpp"

namespace {

using namespace marionette;
using namespace marionette::executor;

// The suspended mass's plan at 5 Hz (its predicted states the loop's reference) with its gains,
// and a rig that measures the mass and its slide: made once.  (An execution's cost is the
// loop's: its start's rest pose -- the mass hangs at rest at its defaults, where the planar
// arm's took half of every execution -- and a linearized step per plan sample and per line.)
struct Fixture {
  ModelPtr model = loadModel("suspended-mass");
  Playback perf;
  RigConfig rig;
  Fixture() {
    PlanRequest request;
    request.model = model;
    request.goal = GoalSpec::parse("q:xm=0.2;tol=0.05");
    request.options.planner = "rrt";
    request.options.output_rate_hz = 5;
    const Plan plan = planMotion(request);
    perf.model = model;
    perf.rate_hz = plan.rate_hz;
    perf.duration_s = plan.duration_s();
    perf.predicted_q = plan.predicted.states;
    perf.inputs.defaults = model->defaultInputs();
    perf.inputs.values = plan.inputs;
    for (int i = 0; i < plan.samples(); ++i) perf.inputs.times_s.push_back(i / plan.rate_hz);
    perf.source = "fuzz plan";
    perf.gains =
        control::planTrackingGains(model, plan.inputs, plan.predicted.states.row(0).transpose(),
                                   plan.rate_hz, control::LqrWeights{});
    rig = RigConfig::parse(
        "channels:\n  xr: {channel: 0, scale: 1000, unit: mm}\n  r: {channel: 1, scale: 50, "
        "unit: rad}\nsensing:\n  markers: [mass]\n  encoders: [xm]\n  marker_unit: mm\n"
        "  encoder_unit: mm\n  rate_hz: 5\n  latency_s: 0.05\n",
        "fuzz-rig.yaml", *model);
  }
};

// The measurements the target hands over, as a driver's pollMeasurements would.
class ReplyRig : public RigDriver {
 public:
  std::vector<MeasurementFrame> inbox;
  std::string uri() const override { return "fuzz:"; }
  Eigen::VectorXd readSetpoints() override { return {}; }
  void send(std::uint32_t, const Eigen::VectorXd&) override {}
  void poll(std::vector<AckEvent>&) override {}
  void hold(std::uint32_t) noexcept override {}
  void pollMeasurements(std::vector<MeasurementFrame>& out, long*) override {
    for (MeasurementFrame& m : inbox) out.push_back(std::move(m));
    inbox.clear();
  }
};

constexpr int kMaxLines = 32;

}  // namespace

void fuzzOne(const std::string& input) {
  static const Fixture f;
  std::vector<std::string> lines;
  std::istringstream in(input);
  for (std::string line; lines.size() < kMaxLines && std::getline(in, line);)
    lines.push_back(line);
  WireFrame pos;
  if (lines.empty() || decodeFrame(lines[0], pos) != DecodeResult::Ok || pos.type != "POS")
    return;
  Eigen::VectorXd now;
  if (!decodeSetpoints(f.rig, pos.fields, now, nullptr)) return;
  const Stream stream = buildStream(f.perf, now, {});
  if (!validateStream(*f.model, stream).empty()) return;
  ClosedLoop loop(f.perf, stream, f.rig.sensing, {}, ClosedLoopOptions{});
  ReplyRig rig;
  std::vector<AckEvent> acks;
  long corrupt = 0;
  Eigen::VectorXd last = stream.rows.row(0).transpose(), before = last, values;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const long row = static_cast<long>(i - 1);
    if (row >= stream.rows.rows()) break;
    readReply(f.rig, lines[i], Clock::now(), acks, rig.inbox, &corrupt);
    std::string why;
    if (!loop.beforeSend(rig, row, stream.phase[row], stream.sample[row],
                         stream.rows.row(row).transpose(), values, why))
      return;  // a safe stop: execute() holds
    if (!frameProblem(*f.model, stream.rate_hz, values, last, before).empty())
      __builtin_trap();  // the loop handed over a frame that breaks a limit
    loop.afterSend(values);
    before = last;
    last = values;
  }
}

MARIONETTE_FUZZ_ENTRY
