// SPDX-License-Identifier: BSD-3-Clause
// How closely a run followed its plan: what `marionette execute --report FILE.json` writes, open
// loop and closed loop alike, so the two compare field by field (docs/executor.md, "The report").
//
// Contents
//   TrackingReport        per named point {rms_m, max_m, at_goal_m}, joints' rms (over the run,
//                         and per pass of a loop), the estimate's rms error, corrections, cycle
//                         times, misses, measurements, the MPC's solves, and the calibration
//                         before the run.
//   buildTrackingReport   from the run: on sim: its truth; on a measuring rig with feedback: the
//                         estimate; otherwise the motion is unknown (null fields).
//   toJson
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "marionette/executor/closed_loop.hpp"
#include "marionette/executor/executor.hpp"
#include "marionette/executor/rig.hpp"
#include "marionette/executor/rig_calibration.hpp"

namespace marionette::executor {

struct TrackingReport {
  std::string feedback = "none";  // "lqr", "mpc" or "none"
  std::string estimator;          // "ekf", "ekf-euler", or "" (none)
  std::string motion_from;        // "truth" (sim:), "estimate", or "" (unknown)
  std::string stop;               // StopReason
  int exit_status = 0;
  struct PointError {
    std::string name;
    double rms_m = NAN, max_m = NAN, at_goal_m = NAN;  // distance from the plan's prediction
  };
  // Over every pass of the play (--loops N: N passes; at_goal_m at the end of the last).
  std::vector<PointError> points;
  double joints_rms = NAN;  // rad (m for slides), over the play's samples and every joint
  // Each pass on its own, in order (the last one cut short where the run stopped).
  struct Pass {
    int samples = 0;
    std::vector<PointError> points;
    double joints_rms = NAN;
  };
  std::vector<Pass> passes;
  double estimation_rms_joints = NAN;    // estimate vs truth, over the play (sim: only)
  double estimation_rms_points_m = NAN;  // the same for every named point's position
  double correction_max = 0.0;           // m or rad
  long clamped = 0;
  double cycle_p50_ms = NAN, cycle_p99_ms = NAN;
  long misses = 0;
  long measurements = 0, fused = 0, late = 0, corrupt = 0, ahead = 0, repeated = 0;
  int samples = 0;  // play samples compared, every pass
  std::optional<RigCalibration> calibration;  // execute --calibrate: the fit before the run
  // --feedback mpc: its solves (started, used, late, starts skipped, failed, kept the warm start,
  // a shorter step), the solver's iterations per solve and per control tick (over the play's
  // ticks), solve times.
  struct Solves {
    long started = 0, used = 0, late = 0, skipped = 0, failed = 0, kept_warm = 0, shortened = 0;
    double iterations_per_solve = NAN, iterations_per_tick = NAN;
    double p50_ms = NAN, p99_ms = NAN;
  };
  std::optional<Solves> solves;
};

// rig: the driver that ran (a SimRig has the truth); loop: the closed loop, or nullptr.
TrackingReport buildTrackingReport(const Playback& perf, const Stream& stream,
                                   const ExecuteReport& run, const RigDriver& rig,
                                   const ClosedLoop* loop, const std::string& feedback,
                                   const std::string& estimator);

std::string toJson(const TrackingReport& r);

// The p-quantile (0..1) of v, nearest rank; NaN when empty.
double percentile(std::vector<double> v, double p);

}  // namespace marionette::executor
