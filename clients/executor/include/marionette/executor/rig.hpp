// SPDX-License-Identifier: BSD-3-Clause
// Rig drivers: one small interface, chosen by URI.
//
//   sim:[?damping=X][&truth=MODEL.yaml&noise=S&rate=HZ&latency=S&seed=N][&clock=simulated]
//                                    the integrator run in real time on the commanded inputs;
//                                    with sensing, a truth (the puppet it simulates, not the
//                                    plan's model) measured with Gaussian noise; on a simulated
//                                    clock, as fast as the executor computes and the same run
//                                    every time on any load
//   serial:/dev/ttyX[?baud=115200]   the line protocol (PROTOCOL.md) on a serial line
//   udp:HOST:PORT                    the same frames, one per datagram
//
// Contents
//   LinkError     the rig cannot be reached any more (device gone, port refused, no answer).
//   AckEvent      what came back for a frame: ACK, NAK, or a line that failed its checksum.
//   RigDriver     readSetpoints / poll / awaitReply; pollMeasurements and sensing for a rig
//                 that measures its puppet (PROTOCOL.md v2); the clock a run is timed on (now,
//                 sleepUntil); send and hold, which move the rig, only for execute()
//                 (executor.hpp).
//   SimTruth      the simulated rig's puppet, its sensing and its pushes.
//   SimRig        the simulated rig; keeps what the puppet did (for comparison with a plan).
//   readReply     one line a rig sent, as the serial and UDP drivers read it.
//   openRig       a driver for a URI.
#pragma once

#include <Eigen/Core>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "marionette/models/error.hpp"
#include "marionette/control/measurement.hpp"
#include "marionette/executor/protocol.hpp"
#include "marionette/executor/sensing.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model.hpp"

namespace marionette::executor {

struct ExecuteOptions;
struct ExecuteReport;
struct Stream;

class LinkError : public ErrorOf<std::runtime_error> {
 public:
  using ErrorOf<std::runtime_error>::ErrorOf;
};

struct AckEvent {
  enum class Kind { Ack, Nak, Corrupt };
  Kind kind = Kind::Ack;
  std::uint32_t seq = 0;  // for Corrupt, the SEQ if the line's layout still shows one, else 0
  std::string detail;     // NAK reason, or the corrupt line
  Clock::time_point received;
};

class RigDriver {
 public:
  virtual ~RigDriver() = default;
  virtual std::string uri() const = 0;
  // The rig's current setpoints (n_k, model units), asked of the rig.  Throws LinkError.
  virtual Eigen::VectorXd readSetpoints() = 0;
  // What came back since the last call, without waiting; each event stamped when it was read.
  // Throws LinkError.
  virtual void poll(std::vector<AckEvent>& out) = 0;
  // Waits until a reply may have come in (poll then has it) or until `until`, whichever is
  // first; may return early (a signal).  A driver with nothing to wait on sleeps to `until`.
  virtual void awaitReply(Clock::time_point until);
  // The clock a run on this rig is timed on: the monotonic clock, except for a simulated rig on
  // its simulated clock, which stands still while the executor computes and moves only when it
  // waits (sleepUntil, awaitReply): no deadline is missed, and a run is the same on any load.
  virtual Clock::time_point now() const { return Clock::now(); }
  // Sleeps until t on that clock; returns early when a signal arrives and *stop is set.
  virtual void sleepUntil(Clock::time_point t, const std::atomic<bool>* stop);
  virtual bool simulatedClock() const { return false; }
  // Whether the rig answers every SET with an ACK (the executor then counts what is missing).
  virtual bool acknowledges() const { return true; }
  // What the rig measures; nullptr for a rig that declares no sensing (it runs open loop).
  virtual const Sensing* sensing() const { return nullptr; }
  // Measurement frames that came in since the last call, each stamped when it was read; MEA
  // lines that failed their checksum or layout are counted in *corrupt.  Throws LinkError.
  virtual void pollMeasurements(std::vector<MeasurementFrame>& out, long* corrupt);

  // The frames from now on prepare the run (a calibration's moves), until markRunStart: the next
  // frame then starts the run.  A simulated rig holds its pushes for the run and counts their
  // times and its frames from the run's first frame.  A hardware rig is told nothing.
  virtual void markPreparation() {}
  virtual void markRunStart() {}

  // Frames (GET, SET, HOLD) are numbered 1, 2, 3, ... in the order they are sent, whoever sends
  // them (PROTOCOL.md): the number for the next frame, and taking it.
  std::uint32_t nextSeq() const { return next_seq_; }
  std::uint32_t takeSeq() { return next_seq_++; }

 protected:
  // What moves the rig, reached through the rig only by execute() (executor.hpp), the one sender:
  // every frame goes out under the operator's link options and every limit's check.
  // Sends one setpoint frame (values n_k, model units).  Throws LinkError when the link is gone.
  virtual void send(std::uint32_t seq, const Eigen::VectorXd& values) = 0;
  // Asks the rig to hold its current setpoints (its own safe command).  Best effort: never
  // throws.
  virtual void hold(std::uint32_t seq) noexcept = 0;

 private:
  friend ExecuteReport execute(RigDriver& rig, const Stream& stream,
                               const ExecuteOptions& options);
  std::uint32_t next_seq_ = 1;
};

// The simulated rig's puppet.  By default the model itself, unmeasured; with sensing, `truth`
// (a model with the same variables and points, but its own masses, string lengths, damping)
// measured at `sensing.rate_hz` with Gaussian noise of `noise` (m for markers, rad or m for
// encoders), each measurement delivered `sensing.latency_s` after it was taken.  Only a report
// reads the truth's states; the executor sees the measurements.
struct SimTruth {
  ModelPtr truth;             // nullptr: the model the rig was made for
  double damping_scale = 1.0;
  Sensing sensing;            // none declared: no measurements
  double noise = 0.0;         // standard deviation of the added noise
  unsigned seed = 1;
  struct Push {
    double at_s = 0.0;            // after the run's first frame (markRunStart), else the rig's
    int joint = -1;               // a dynamic variable ...
    double delta_velocity = 0.0;  // m/s or rad/s, added to the truth's velocity at that time
    // ... or (joint -1) a point of the truth, by name, given this velocity by a blow there: the
    // impulse that changes the point's velocity by it with the least kinetic energy (a string or
    // a stop the blow pulls or pushes against answers at the next step).
    std::string point;
    Eigen::Vector3d point_delta_mps = Eigen::Vector3d::Zero();
  };
  std::vector<Push> pushes;
  // The rig's clock (RigDriver::now): false, the monotonic clock, the rig run in real time as
  // hardware is; true, a simulated clock that moves only when the executor waits.
  bool simulated_clock = false;
};

// The generalised impulse (n_d) of a blow at `point` (m.points' index) that changes its velocity
// by dv_mps with the least kinetic energy: dp = J^T f with J M^-1 J^T f = dv (J the point's
// Jacobian over the dynamic variables, M the mass matrix at q).  `given` is the velocity change it
// makes: dv, or its part the point's joints can give it (a planar model's point cannot leave its
// plane).  SimTruth's push.
Eigen::VectorXd pointImpulse(const Model& m, const Eigen::VectorXd& q_d, const Eigen::VectorXd& rho,
                             int point, const Eigen::Vector3d& dv_mps, Eigen::Vector3d& given);

// The simulated rig.  Its clock starts at the first frame; a frame received at time t (rounded
// to the rig's period) steps the integrator up to t, holding the previous setpoints over
// any period no frame arrived for (a late frame shows as the puppet seeing a held input), and
// ending at the new ones.  Starts at rest at the truth's default inputs, or at `start_inputs`.
// A measuring rig samples its truth at the first tick at or after each measurement time and
// stamps the measurement with that tick's time.
class SimRig : public RigDriver {
 public:
  SimRig(ModelPtr model, double rate_hz, double damping_scale = 1.0,
         const Eigen::VectorXd& start_inputs = Eigen::VectorXd());
  // Throws std::invalid_argument when the truth's variables or points are not the model's.
  SimRig(ModelPtr model, double rate_hz, SimTruth truth,
         const Eigen::VectorXd& start_inputs = Eigen::VectorXd());
  std::string uri() const override { return "sim:"; }
  Eigen::VectorXd readSetpoints() override { return state_.rho; }
  void send(std::uint32_t seq, const Eigen::VectorXd& values) override;
  void poll(std::vector<AckEvent>& out) override;
  void hold(std::uint32_t) noexcept override {}
  const Sensing* sensing() const override {
    return truth_.sensing.declared() ? &truth_.sensing : nullptr;
  }
  void awaitReply(Clock::time_point until) override;
  Clock::time_point now() const override;
  void sleepUntil(Clock::time_point t, const std::atomic<bool>* stop) override;
  bool simulatedClock() const override { return truth_.simulated_clock; }
  void pollMeasurements(std::vector<MeasurementFrame>& out, long* corrupt) override;
  void markPreparation() override;
  void markRunStart() override;

  const Model& truthModel() const { return *truth_.truth; }
  double period_s() const { return period_s_; }
  // The truth's state: one row per rig period since the first frame (row 0 = the start).
  const std::vector<Eigen::VectorXd>& measuredQ() const { return q_history_; }
  // The period index each frame of the run (since markRunStart) landed on, in the order received.
  const std::vector<long>& frameTicks() const { return frame_ticks_; }
  // The pushes (in time order) and how many of them have been applied.
  const std::vector<SimTruth::Push>& pushes() const { return truth_.pushes; }
  std::size_t pushesApplied() const { return pushes_done_; }

 private:
  void stepTo(const Eigen::VectorXd& rho_next);
  void measure();  // at the current tick, when one is due
  ModelPtr model_;
  SimTruth truth_;
  double period_s_;
  VariationalIntegrator vi_;
  State state_, next_;
  bool started_ = false;
  Clock::time_point t0_;
  // The simulated clock's time (truth_.simulated_clock): from an arbitrary origin, moved forward
  // by sleepUntil and awaitReply only.
  Clock::time_point simulated_now_ = Clock::time_point(std::chrono::hours(1));
  long tick_ = 0;
  std::vector<Eigen::VectorXd> q_history_;
  std::vector<long> frame_ticks_;
  std::vector<AckEvent> pending_;
  // Sensing.
  std::unique_ptr<control::MeasurementModel> measurement_;
  std::unique_ptr<DynamicsData> truth_data_;
  std::mt19937 rng_;
  double next_measurement_s_ = 0.0;
  std::uint32_t measurement_seq_ = 0;
  std::vector<std::pair<Clock::time_point, MeasurementFrame>> in_flight_;
  std::size_t pushes_done_ = 0;
  // The rig's time the pushes count from: its first frame's, or the run's after a preparation
  // (markRunStart; NaN until that frame arrives, and through a preparation).
  double push_origin_s_ = 0.0;
  bool in_run_ = true;            // false from markPreparation to markRunStart
  std::vector<int> push_points_;  // per push (sorted): the truth's point index, or -1
};

// One line a rig sent (without its line end), as the executor reads it between frames: an
// ACK, a NAK (its reason, the rig's bytes as they came) or a line that fails its checksum or
// layout into `acks`; a MEA frame of a rig that declares sensing into `measurements`, or counted
// in *corrupt_measurements when it does not decode; a POS (a late answer to GET) and anything
// else ignored.
void readReply(const RigConfig& rig, const std::string& line, Clock::time_point received,
               std::vector<AckEvent>& acks, std::vector<MeasurementFrame>& measurements,
               long* corrupt_measurements);

// rate_hz: the rate frames will be sent at (the simulated rig steps at it).  rig: the channel
// map and sensing for serial / UDP; for sim: only its sensing (when declared, the simulated rig
// measures those values; sim: with truth, noise, rate, latency or seed and no sensing declared
// measures every named point of the model).  Throws std::invalid_argument for a bad URI, LinkError
// when it cannot be opened.
std::unique_ptr<RigDriver> openRig(const std::string& uri, const ModelPtr& model,
                                   const RigConfig& rig, double rate_hz);

}  // namespace marionette::executor
