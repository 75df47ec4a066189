// SPDX-License-Identifier: BSD-3-Clause
// Calibrating a puppet on its rig before a run (control/calibration.hpp): the rig is taken to a
// few poses chosen for what they tell (chooseCalibrationPoses), held still there while the puppet
// comes to rest (a light puppet swings for long: the moves are slow and smooth, and the window
// long enough to average a swing out), its measurements averaged, and the constant string lengths
// (and named masses) fitted to them.  Every move is an ordinary stream (ramp within half the
// limits, then a hold), checked and sent by execute(); a stop (a signal, a lost link, a refused
// frame) ends it as it ends a run.
//
// Contents
//   RigCalibrationOptions   how many poses, how far, how long to settle and to measure, the fit.
//   RigCalibration          the fit, the poses, the samples and how still the puppet was at each,
//                           and how the rig's moves went.
//   calibrateOnRig          the procedure.
//   writeCalibrationJson    the result as a JSON object (the calibrate and execute reports).
#pragma once

#include <Eigen/Core>
#include <atomic>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "marionette/control/calibration.hpp"
#include "marionette/executor/executor.hpp"
#include "marionette/executor/rig.hpp"

namespace marionette::executor {

constexpr int kMaxCalibrationPoses = 50;

struct RigCalibrationOptions {
  // Held in turn, the first the rig's start, which is held and measured again at the end (at
  // least 1, at most kMaxCalibrationPoses)
  int poses = 5;
  double share = 0.15;     // each input moved at most this share of its range, in (0, 0.5]
  double settle_s = 4.0;   // held still before measuring, in [0, 60] (after a move of >= 3 s)
  double measure_s = 6.0;  // measurements averaged, in (0, 60]
  double send_rate_hz = 50.0;
  control::CalibrationOptions fit;
  // Vetoes a pose whose rest pose q (n_q) is not safe to hold (it touches the stage); may be empty.
  std::function<bool(const Eigen::VectorXd& q)> acceptable;
  // Inputs (by name) the operator holds: they stay where the rig has them through every move,
  // and the poses are chosen without them.
  std::vector<std::string> held;
};
// Throws FieldError naming the option ("poses", "share", "settle_s", "measure_s",
// "send_rate_hz", "held", and the fit's).
void checkRigCalibrationOptions(const RigCalibrationOptions& options);

struct RigCalibration {
  bool ok = false;
  std::string message;                 // why not, when !ok
  ExecuteReport moves;                 // the last move's report (a stop says why)
  std::vector<Eigen::VectorXd> poses;  // the inputs held (the last: the start again)
  std::vector<int> samples;            // measurements averaged at each
  // At each pose, the largest change of a measured value's mean between the first and the second
  // half of its window (m or rad): a puppet still swinging shows here.  Each mean's deviation is
  // taken as the larger of the noise's and half that change, so a swinging pose weighs less.
  std::vector<double> drift;
  control::Calibration fit;  // when ok
  double elapsed_s = 0.0;
  // When its first frame went out: a rig's measurements are stamped from its first SET
  // (ClosedLoopOptions::rig_clock_start for a run after it).
  std::optional<Clock::time_point> first_frame_sent;
};

// rig: a rig that measures (rig.sensing() not null).  Every move is sent by execute() under
// `link`, the operator's options (a lost link stops the calibration as it stops a run).  The rig
// ends holding the last pose.  Throws FieldError, before anything moves, for bad options and
// when the poses cannot identify what is fitted (told from the model's own predictions).  After
// the moves, a stop, too few measurements or a fit the measurements cannot support is a result
// with ok false.
RigCalibration calibrateOnRig(RigDriver& rig, const ModelPtr& model,
                              const RigCalibrationOptions& options, const LinkOptions& link);

// {"poses": N, "samples": [...], "drift": [...], "parameters": [{"name", "kind", "unit",
// "nominal", "fitted", "std"}, ...], "rms_residual_m", "nominal_rms_residual_m",
// "max_residual_m", "chi2_per_dof",
// "iterations", "converged", "pose_rms_m": [...], "nominal_pose_rms_m": [...], "elapsed_s"},
// members after `indent` (a successful calibration).
void writeCalibrationJson(std::ostream& os, const RigCalibration& c, const std::string& indent);

}  // namespace marionette::executor
