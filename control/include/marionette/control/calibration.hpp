// SPDX-License-Identifier: BSD-3-Clause
// Calibration at rest: the constant string lengths (and, optionally, the masses) of a puppet that
// explain what its markers measure while the rig holds it still at a few poses.  At rest the
// puppet is at the rest pose of its inputs (rest_pose.hpp), the minimum of its potential under the
// strings, stops and contacts; the measured markers are h(q*(rho_i; theta)) + noise.  The fit is
// weighted nonlinear least squares over theta (Levenberg-Marquardt; the rest poses' derivatives
// by finite differences of Newton-polished equilibria, continued from the current one), and the
// uncertainty the Gauss-Newton covariance sigma^2 (J^T W J)^-1, scaled up by the residual when the
// fit is worse than the noise explains.  A parameter the poses cannot tell (a string slack in
// every pose, two masses only their ratio shows) is refused before fitting, named.
//
// Masses: a uniform scale of every mass leaves every rest pose unchanged (only ratios show), so
// the masses fitted are those named, each against the ones held at their model values.  A mass's
// scale multiplies its inertia too (the same shape and material).
//
// Contents
//   CalibrationPose       the inputs held and the markers' mean over that many samples.
//   CalibrationOptions    what to fit, the Levenberg-Marquardt budget, the identifiability bound.
//   CalibratedParameter   one fitted value with its standard deviation.
//   Calibration           the parameters, the calibrated model, the residuals.
//   calibrateAtRest       the fit; checkCalibrationPoses its checks alone.
//   chooseCalibrationPoses  a D-optimal choice of poses: the start, and each input moved a
//                         share of its range, greedily by log det of the information.
//   withParameters        a model with some constant string lengths and mass scales changed.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <string>
#include <vector>

#include "marionette/control/measurement.hpp"
#include "marionette/models/model.hpp"
#include "marionette/models/rest_pose.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette::control {

struct CalibrationPose {
  Eigen::VectorXd rho;  // n_k: the inputs the rig held
  Eigen::VectorXd y;    // the measurement's mean (MeasurementModel's layout)
  int samples = 1;      // how many measurements were averaged: the noise is sigma / sqrt(samples)
  // Each mean's standard deviation, when it is known better than sigma / sqrt(samples) (a puppet
  // still swinging a little: the scatter of its window); empty: sigma / sqrt(samples).
  Eigen::VectorXd std;
};

struct CalibrationOptions {
  bool strings = true;              // fit every constant-length string's length
  std::vector<std::string> masses;  // fit these masses (by name), the others held
  int max_iterations = 30;  // Levenberg-Marquardt iterations (each: 1 + P rest poses a pose)
  // The smallest singular value of the information matrix, relative to its largest, with every
  // parameter scaled to its typical size (1 mm, 1 %): below it, the poses cannot tell the
  // parameters apart.
  // (The rest poses' derivatives are finite differences good to ~1e-5 of the largest: a
  // direction they cannot see shows as that, not as zero.)
  double min_relative_singular_value = 1e-4;
  // The acceptance test: a fit whose chi2 / dof (the weighted residual against each mean's
  // deviation) is above this is not one the markers' noise explains -- markers swapped or
  // misnamed, a wrong rig file, a puppet far from its model -- and is refused, naming the worst
  // markers.  In [1, 1e6].
  double max_chi2_per_dof = 25.0;
  RestPoseOptions rest;  // how each rest pose is found (its contacts, its budget)
};
// Throws FieldError naming the option: "max_iterations", "min_relative_singular_value",
// "max_chi2_per_dof".
void checkCalibrationOptions(const CalibrationOptions& options);

struct CalibratedParameter {
  enum class Kind { StringLength, MassScale };
  Kind kind = Kind::StringLength;
  int index = -1;        // into model.strings or model.masses
  std::string name;      // the string's or the mass's
  double nominal = 0.0;  // m (a length) or 1 (a scale)
  double fitted = 0.0;
  double std = 0.0;  // one standard deviation, in the same unit
  const char* unit() const { return kind == Kind::StringLength ? "m" : "x"; }
};

struct Calibration {
  std::vector<CalibratedParameter> parameters;
  ModelPtr model;                       // the model with the fitted values
  int iterations = 0;                   // Levenberg-Marquardt iterations taken
  // The last step was below a hundredth of every std, or no step lowered the cost any more (the
  // minimum, to the rest poses' precision); false when the budget ran out or the last trial
  // steps found no rest pose.
  bool converged = false;
  double rms_residual_m = 0.0;          // over every measured value, at the fit (m or rad)
  double nominal_rms_residual_m = 0.0;  // the same with the model's own values
  double max_residual_m = 0.0;
  double chi2_per_dof = 0.0;               // the weighted residual's square / (values - parameters)
  std::vector<double> pose_rms_m;          // per pose, at the fit
  std::vector<double> nominal_pose_rms_m;  // per pose, with the model's own values
  std::vector<Eigen::VectorXd> rest_q;     // per pose: the calibrated puppet's rest pose (n_d)
  // Per marker (or encoder), worst first: its name and its weighted residual's rms over its
  // values and poses at the fit (1: as the noise says).
  std::vector<std::pair<std::string, double>> marker_misfit;
};

// The poses' rest poses are followed from one to the next, as the rig visits them (the first from
// the model's guess): a puppet has more than one equilibrium for some inputs, and it rests in the
// one its path leads to.
// Throws FieldError: "poses" (none, a pose of the wrong size, too few values for the parameters,
// a rest pose not found), "strings" / "masses" (nothing to fit, a mass that is not the model's,
// a parameter the poses cannot identify: named), "fit" (chi2 / dof above
// options.max_chi2_per_dof: the worst markers named), and the options'.
Calibration calibrateAtRest(const ModelPtr& model, const MeasurementSpec& spec,
                            const std::vector<CalibrationPose>& poses,
                            const CalibrationOptions& options);

// calibrateAtRest's checks alone (the poses, what they can identify; no fit): throws what it would.
void checkCalibrationPoses(const ModelPtr& model, const MeasurementSpec& spec,
                           const std::vector<CalibrationPose>& poses,
                           const CalibrationOptions& options);

// `count` poses to hold (the first is rho0): among rho0 and each input moved by `share` of its
// range either way (within the range; `acceptable`, when given, vetoes a rest pose q, n_q, e.g. one
// that touches the stage; an input whose `fixed` entry (n_k, or empty) is non-zero never moves),
// greedily those that most increase log det(J^T W J) for the parameters `options` fits.  Throws
// FieldError("poses") when fewer than `count` candidates are usable.
std::vector<Eigen::VectorXd> chooseCalibrationPoses(
    const ModelPtr& model, const MeasurementSpec& spec, const Eigen::VectorXd& rho0, int count,
    const CalibrationOptions& options, double share = 0.15,
    const std::function<bool(const Eigen::VectorXd& q)>& acceptable = nullptr,
    const std::vector<char>& fixed = {});

// The model with these parameters at `values` (a length in m, a scale).
ModelPtr withParameters(const Model& model, const std::vector<CalibratedParameter>& parameters,
                        const Eigen::VectorXd& values);

}  // namespace marionette::control

#pragma GCC visibility pop
