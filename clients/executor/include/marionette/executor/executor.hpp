// SPDX-License-Identifier: BSD-3-Clause
// The executor: streams a plan's input sequence to a rig, with the loop, slow-down and per-limb
// disable of PuppetCopter's executor (Egger, "Simulation and Animation of a Robotic Puppet",
// BSc thesis, ETH Zurich 2013, §3.3).
//
// Contents
//   Playback          what to play: inputs over time (from plan.json or a CSV), its own rate,
//                     and the plan's predicted states when it has them.
//   StreamOptions     rate scale, send rate, held variables, ramp and settle.
//   Stream            every row that will be sent, at the send rate: ramp-in, settle, play
//                     (and for --loop the ramp back from the last row to the first).
//   buildStream       the stream from where the rig is now.
//   validateStream    every row against the rig's range, speed and acceleration limits;
//                     messages name the variable, the phase and sample, and the limit.
//   frameProblem      the last check of a frame before it is sent: finite, within range, speed
//                     and acceleration from the two frames before it.
//   LinkOptions       the operator's link options, the stop request and the log: every frame
//                     any motion sends goes out under them.
//   ExecuteOptions / ExecuteReport / execute
//                     the loop on absolute deadlines: misses counted, never made up; replies
//                     read as they arrive between ticks; every frame checked (frameProblem);
//                     stops safely (hold) on a signal, a lost link, a NAK (before the next
//                     frame), too many consecutive misses, or a frame that breaks a limit.
//   CommandLog        one CSV line per command sent and per ack, flushed as it goes.
#pragma once

#include <Eigen/Core>
#include <atomic>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "marionette/control/tracking_lqr.hpp"
#include "marionette/executor/rig.hpp"
#include "marionette/models/model.hpp"
#include "marionette/models/simulation.hpp"

namespace marionette::executor {

class ClosedLoop;

struct Playback {
  ModelPtr model;
  InputSchedule inputs;  // rig setpoints over [0, duration_s] (model units)
  double duration_s = 0.0;
  double rate_hz = 50.0;        // its own sample rate: the default send rate
  Eigen::MatrixXd predicted_q;  // rows at rate_hz from t = 0 (n_d columns), or empty
  std::string source;           // the file, for messages
  std::string scene;            // the plan's scene (name or file), "" for none
  control::TrackingGains gains;  // the plan's feedback gains (`plan --gains`), or empty
};

// plan.json as `marionette plan --out` writes it.  model: the model to use (nullptr = load the
// one the plan names; given, its name must be the plan's).  Refuses a plan that is not
// collision-free or breaks the input limits.  Throws std::invalid_argument naming the file and
// field.
Playback loadPlanFile(const std::string& path, const ModelPtr& model);
// A CSV "t,<kinematic names>" (InputSchedule's format).  Its rate: 1 / the time step when the
// rows are evenly spaced (whatever rate_hz says), else rate_hz (which must then be given, > 0:
// the rows are then sampled at it by linear interpolation).
Playback loadInputsCsv(const std::string& path, const ModelPtr& model, double rate_hz = 0.0);

enum class Phase { Ramp, Settle, Play, Return };
const char* toString(Phase p);

struct StreamOptions {
  double rate_scale = 1.0;           // playback speed: 0.5 plays the performance at half speed
  double send_rate_hz = 0.0;         // 0 = the performance's rate
  std::vector<std::string> hold;     // variables kept at the rig's current setpoint throughout
  double ramp_limit_fraction = 0.5;  // ramps use this share of each speed / acceleration limit
  double min_ramp_s = 1.0;           // a ramp that moves anything lasts at least this long
  // A rig whose every variable is this close to the first row (m or rad, the model's units) is
  // there already: no ramp (a position read back through degrees or steps differs by ~1e-8).
  double ramp_tolerance = 1e-6;
  double settle_s = 0.0;             // after a ramp, the rig holds still this long before playing
};

struct Stream {
  ModelPtr model;  // whose kinematic variables' limits every frame is checked against
  double rate_hz = 50.0;
  Eigen::MatrixXd rows;         // M x n_k: ramp-in, settle, play
  std::vector<Phase> phase;     // M
  std::vector<int> sample;      // M: index within its phase
  Eigen::MatrixXd return_rows;  // for --loop: ramp from the last row back to the first, settle
  std::vector<Phase> return_phase;
  int play_begin = 0;  // first Play row
  int play_rows = 0;
  // The frame (in send order) that plays sample `at` of pass `pass` (from 0) of a loop: the
  // first pass, then for each further one the way back and the play again.
  long playFrame(long pass, int at) const {
    return play_begin + pass * (play_rows + return_rows.rows()) + at;
  }
};

// rig_now: the rig's current setpoints (n_k), each finite and within its variable's range (up
// to checkInputLimits' tolerance).  Throws std::invalid_argument for bad options (an unknown
// held variable, rate scale <= 0, ...) and a rig position beyond its range.
Stream buildStream(const Playback& perf, const Eigen::VectorXd& rig_now,
                   const StreamOptions& options);

// Empty when every row (including the loop's way back) is within the model's limits; else one
// message per variable and limit, e.g.
//   "act_arm_l_len: speed 0.41 > max_speed 0.3 at play sample 12 (t = 0.24 s)".
std::vector<std::string> validateStream(const Model& model, const Stream& stream);

// Unsafe: with feedback, the estimate said the puppet drifted beyond its bound or will collide,
// or was not finite; or a frame would have broken a limit (it was not sent).
enum class StopReason { Completed, Signal, LinkLost, RigRefused, DeadlineMisses, Unsafe };
const char* toString(StopReason r);
// The executable's exit status for each: 0, 3, 4, 4, 5, 7.
int exitStatus(StopReason r);

// One CSV line per event, written and flushed at once:
//   event,seq,phase,sample,deadline_s,time_s,late_ms,rtt_ms,<kinematic names...>
// event: sent | ack | nak | ack-lost | ack-corrupt | hold | stop.  Times are seconds since the
// run's first deadline (monotonic clock).
class CommandLog {
 public:
  CommandLog(const std::string& path, const Model& model);  // throws naming the path
  ~CommandLog();
  CommandLog(const CommandLog&) = delete;
  CommandLog& operator=(const CommandLog&) = delete;
  void sent(std::uint32_t seq, Phase phase, int sample, double deadline_s, double time_s,
            const Eigen::VectorXd& values);
  void event(const char* what, std::uint32_t seq, double time_s, double rtt_ms,
             const std::string& detail = "");

 private:
  std::FILE* f_;
  int nk_;
};

// How every frame to a rig goes out and when the link is given up: the operator's options
// (--max-misses, --ack-timeout, --max-lost-acks), the stop request and the command log.  Every
// motion the executor makes -- a calibration's moves, a ramp, a settle, the play, the way back --
// is sent by execute() under one LinkOptions, the operator's: none builds its own.
struct LinkOptions {
  double miss_tolerance_periods = 0.5;                // a tick woken later than this is missed
  int max_consecutive_misses = 5;                     // more stop the run (hold)
  double ack_timeout_s = 0.0;                         // 0 = max(0.1 s, 3 periods)
  int max_consecutive_lost_acks = 5;                  // more = the link is lost
  const std::atomic<bool>* stop_requested = nullptr;  // e.g. set by SIGINT / SIGTERM
  CommandLog* log = nullptr;
};

struct ExecuteOptions : LinkOptions {
  ExecuteOptions() = default;
  explicit ExecuteOptions(const LinkOptions& link) : LinkOptions(link) {}
  int loops = 1;                   // 0 = until stopped
  bool keep_send_lateness = true;  // fill ExecuteReport::late_ms
  // Feedback: corrects every frame from the rig's measurements (closed_loop.hpp), or nullptr.
  ClosedLoop* closed_loop = nullptr;
  // Called after every frame sent (e.g. to read the rig's measurements), or empty.
  std::function<void(RigDriver& rig, Phase phase, int sample)> after_frame;
};

struct ExecuteReport {
  StopReason reason = StopReason::Completed;
  std::string message;  // why it stopped, and where
  long frames_sent = 0;
  long missed_ticks = 0;  // deadlines with nothing sent (the performance waited)
  int longest_miss_run = 0;
  long acks = 0, acks_lost = 0, acks_corrupt = 0, naks = 0;
  int loops_done = 0;
  Phase stopped_phase = Phase::Ramp;
  int stopped_sample = -1;      // the last row sent, within its phase (-1: none)
  // n_k: what the rig holds: the last row sent, or when the rig refused that one the row
  // before it (empty when the rig holds what it had before the run).
  Eigen::VectorXd last_sent;
  std::vector<double> late_ms;  // per frame: send time minus its deadline
  double elapsed_s = 0.0;
  // The send loop's priority: "real-time (SCHED_RR 40)" where the system permits it, else
  // "normal (...)" saying why (the MPC's worker always runs at the process's own).
  std::string send_priority;
};

// "" when `frame` (n_k) may follow `last` and `before_last` at rate_hz: finite, within each
// variable's range, speed and acceleration limits (with checkInputLimits' tolerances); else
// what it breaks, e.g. "xr: nan is not a number", "r: speed 1.3 > max_speed 1".
std::string frameProblem(const Model& model, double rate_hz, const Eigen::VectorXd& frame,
                         const Eigen::VectorXd& last, const Eigen::VectorXd& before_last);

// Plays `stream` on `rig` (the stream must have passed validateStream).  Never throws for the
// rig's sake: a lost link is a stop reason.  Every frame is checked (frameProblem) before it is
// sent, against the two frames before it (before the first: the rig at rest at the stream's
// first row); a frame that breaks a limit (a correction gone wrong) is not sent, and the run
// stops (Unsafe: HOLD).
ExecuteReport execute(RigDriver& rig, const Stream& stream, const ExecuteOptions& options);

}  // namespace marionette::executor
