// SPDX-License-Identifier: BSD-3-Clause
// Closing the loop on a rig that measures its puppet: at every tick the estimate of the puppet's
// state (an EKF on the VI one-step map, or the Euler baseline: control/estimator.hpp) gives the
// setpoints: the plan's corrected by time-varying LQR along the plan (control/tracking_lqr.hpp),
// or a receding-horizon controller's on the transcription, which knows the strings' switches
// (trajopt/predictive_control.hpp, solved on a worker: src/predictive_feedback.hpp); clamped to
// every range, speed and acceleration limit and to a maximum deviation from the plan.  The
// executor's loop calls it around every frame it sends.
//
// Contents
//   ClosedLoopOptions   feedback (LQR or MPC), estimator, weights, bounds; checkClosedLoopOptions.
//   ClosedLoopStats     measurements used / late / corrupt, corrections and clamps, cycle times.
//   PredictiveStats     the MPC's solves: used, late, failed; iterations and times.
//   ClosedLoop          the per-tick work: beforeSend (measurements in, the setpoints out, or a
//                       reason to stop) and afterSend (the prediction with what was sent);
//                       runEnded.
//
// Time: tick 0 is the run's first frame (the rig's clock starts there, PROTOCOL.md); frame k
// takes the rig's puppet from tick k - 1 to tick k.  A measurement stamped s seconds is of tick
// round(s * rate).  Only the play is corrected (its first sample is the plan's start, sent as
// planned); ramps and settles are estimated, not corrected.
#pragma once

#include <Eigen/Core>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "marionette/control/estimator.hpp"
#include "marionette/control/tracking_lqr.hpp"
#include "marionette/executor/executor.hpp"
#include "marionette/executor/rig.hpp"
#include "marionette/trajopt/predictive_control.hpp"

namespace marionette::executor {

class PredictiveFeedback;

enum class Feedback { Lqr, Predictive };
const char* toString(Feedback f);  // "lqr", "mpc"

struct ClosedLoopOptions {
  Feedback feedback = Feedback::Lqr;
  control::EstimatorOptions estimator;  // dt_s is the stream's period
  control::LqrWeights weights;          // the LQR's cost, and the MPC's
  // The MPC's horizon and iterations per solve (its weights are `weights`).
  PredictiveOptions predictive;
  // The MPC's solves are for the sample this far ahead of the one they start at (s, in (0, 1];
  // whole ticks, at least one): a solve not back by then is late and dropped.
  double solve_lead_s = 0.1;
  // A solve starts every this many seconds (s, in (0, 1]; whole ticks, at least one), from the
  // setpoints the solves before it will send: shorter than the lead, solves overlap.  A start
  // that finds the last solve still running is skipped.
  double solve_period_s = 0.1;
  bool correct = true;           // false: estimate only (the setpoints are the plan's)
  double max_correction = 0.05;  // m or rad, in (0, 10]: a setpoint is never further than this
                                 // from the plan
  double max_deviation = 0.3;    // m or rad, in (0, 10]: an estimated joint further than this
                                 // from the plan stops the run (hold)
  // m, in [0, 10]: an estimated named point further than this from where the plan predicts it
  // stops the run (hold); 0: no such bound.
  double max_point_deviation_m = 0.0;
  // The puppet as calibrated at rest (rig_calibration.hpp): the estimator's and the gains' model,
  // and the reference is the plan's inputs re-simulated on it (what the puppet does open loop,
  // which the loop then keeps it to).  nullptr: the plan's model and its predicted states.
  ModelPtr calibrated;
  // Where the puppet rests at the rig's start (n_d; a calibration's last pose, as its
  // measurements showed it); empty: the rest pose of the stream's first row from the model's guess.
  Eigen::VectorXd start_q;
  // When the rig's clock started, taken just before its first SET went out (a calibration's
  // before this run: its measurements are stamped from then; the offset is rounded to whole
  // periods, the rig's ticks); empty: this run's first frame.  Measurements stamped before the
  // run are counted late.
  std::optional<Clock::time_point> rig_clock_start;
  // Whether the puppet at configuration q (n_q) touches the stage or itself, and what; empty:
  // no check.  Checked on the state each corrected frame leads to, predicted from the estimate.
  std::function<bool(const Eigen::VectorXd& q, std::string& what)> collides;
};

// The MPC's defaults (`--feedback mpc`): the plan's named points as its targets (point_weight 10)
// with no joint terms; light corrections (rig and correction 0.1, rate 0.01, acceleration 0.001:
// the controller predicts what a jerk does to the light parts, which the LQR's weights had to
// forbid) within 0.1 m or rad of the plan; windows past the plan's end with the rig held; 10
// iterations a solve for the sample 0.24 s ahead (PuppetCopter's take 110-180 ms here); the
// drift bound on the points, 0.2 m, and on the joints only at 3.2 rad (after a push
// PuppetCopter's arms twist and its lower legs swing by a radian while its points stay within
// centimetres).  Measured: benchmarks.md, "The receding-horizon controller".
ClosedLoopOptions predictiveDefaults();

// Throws FieldError naming an option outside its range: "max_correction", "weights.position",
// "estimator.velocity_std", ... (the estimator's dt_s is the stream's, set by ClosedLoop).
void checkClosedLoopOptions(const ClosedLoopOptions& options);

struct ClosedLoopStats {
  long measurements = 0;  // frames received
  long fused = 0;
  long late = 0;     // stamped before the last fused one, or older than latency + 2 periods on
                     // arrival, or beyond the filter's history
  long corrupt = 0;  // failed their checksum or layout
  long ahead = 0;    // stamped after the tick the estimate has reached (a clock off): not used
  long repeated = 0;  // a SEQ among the last 256 received (a frame duplicated): not used
  double max_correction = 0.0;  // largest |correction| sent, m or rad
  long clamped = 0;             // setpoints the limits or --max-correction clamped
  std::vector<double> cycle_ms;        // per frame: measurements in, correction, prediction
};

// The MPC's solves (predictive_feedback.hpp in src/ says when one is used, late or failed).
struct PredictiveStats {
  long started = 0;    // solves started
  long used = 0;       // solutions that became the setpoints
  long late = 0;       // back after their sample (dropped)
  long skipped = 0;    // starts due while the worker was still busy
  long failed = 0;     // no inputs (the solver's or the warm start's) re-simulate; or it threw
  long kept_warm = 0;  // the solver's inputs cost more than the warm start's (the warm start used)
  long shortened = 0;  // a half or a quarter of the step towards the solver's inputs used
  std::vector<int> iterations;   // per solve back in time
  std::vector<double> solve_ms;  // per solve back (wall clock on the worker)
};

class ClosedLoop {
 public:
  // perf: a plan (its inputs and predicted states) whose stream plays it at its own rate.  The
  // gains: the plan's own (perf.gains) when they were computed with options.weights, else
  // computed here.  The estimator starts with the puppet at rest at the stream's first row.
  // Throws std::invalid_argument (the plan cannot be re-simulated from rest, its gains do not
  // fit it, ...) before anything moves.
  ClosedLoop(const Playback& perf, const Stream& stream, const Sensing& sensing,
             const std::vector<std::string>& held, ClosedLoopOptions options);
  ~ClosedLoop();

  // The frame for host tick `tick` (first frame: the first call), row `row` of its phase and
  // sample, is about to go out: reads the rig's measurements, fuses them, and sets `values`.
  // False when the run must stop, and why.
  bool beforeSend(RigDriver& rig, long tick, Phase phase, int sample, const Eigen::VectorXd& row,
                  Eigen::VectorXd& values, std::string& why);
  // The frame went out: the estimate is predicted through it.
  void afterSend(const Eigen::VectorXd& values);
  // The run is over (execute() says so as it returns): the MPC's worker stops, a solve under way
  // abandoned within one of its iterations.
  void runEnded();

  const ClosedLoopStats& stats() const { return stats_; }
  // The clamps of the frame beforeSend just made, one line each (for the command log).
  const std::vector<std::string>& frameClamps() const { return frame_clamps_; }
  const control::TrackingGains& gains() const { return gains_; }  // empty with the MPC
  // The MPC's solves (nullptr with the LQR).
  const PredictiveStats* predictiveStats() const;
  int solveLeadTicks() const;    // the MPC's (0 with the LQR)
  int solvePeriodTicks() const;  // the MPC's (0 with the LQR)
  Feedback feedback() const { return options_.feedback; }
  bool gainsFromPlan() const { return gains_from_plan_; }
  // The filtered joint estimate of every rig tick, as it was when the next frame was computed
  // (row t: tick t; NaN where no frame followed).
  const std::vector<Eigen::VectorXd>& estimates() const { return estimates_; }
  const control::Estimator& estimator() const { return *estimator_; }

 private:
  bool correctFrame(RigDriver& rig, long tick, Phase phase, int sample, const Eigen::VectorXd& row,
                    Eigen::VectorXd& values, std::string& why);
  void fuseMeasurements(RigDriver& rig);
  // Clamps u (n_k) in place to the limits given the last two frames; counts and logs.
  void clamp(const Eigen::VectorXd& row, Eigen::VectorXd& u, long tick);

  ModelPtr model_;
  ClosedLoopOptions options_;
  Sensing sensing_;
  double rate_hz_;
  control::TrackingGains gains_;
  bool gains_from_plan_ = false;
  std::vector<State> reference_;  // the plan re-simulated: x_ref per play sample
  std::vector<std::vector<char>> taut_;  // its taut strings per sample
  std::unique_ptr<DynamicsData> dyn_scratch_;
  std::unique_ptr<control::Estimator> estimator_;
  std::unique_ptr<PredictiveFeedback> predictive_;
  Eigen::MatrixXd plan_points_m_;  // per play sample, 3 per named point: the plan's prediction
  std::unique_ptr<VariationalIntegrator> predictor_;  // for the collision look-ahead
  std::vector<char> held_;                            // n_k: never corrected
  long first_tick_ = -1;
  long rig_tick_ = 0;  // the rig's tick of the frame about to go out
  Clock::time_point first_sent_;
  double clock_offset_s_ = 0.0;  // the rig's clock at this run's first frame
  Eigen::VectorXd last_sent_, before_last_sent_;
  std::vector<Eigen::VectorXd> estimates_;
  std::vector<MeasurementFrame> inbox_;
  std::deque<std::uint32_t> recent_seqs_;  // the last MEA SEQs received
  ClosedLoopStats stats_;
  double before_ms_ = 0.0;  // this frame's beforeSend
  std::vector<std::string> frame_clamps_;
};

}  // namespace marionette::executor
