// SPDX-License-Identifier: BSD-3-Clause
// The rig's motion as planners produce it: knots every dt with setpoints and their rates,
// constant acceleration in between (so speed and acceleration limits hold between knots too,
// and sampling it at any rate keeps both: the sampled second differences average |rho''| <= a).
//
// Contents
//   RigTrajectory    knots (positions, velocities), sampling, resampling at an output rate.
//   rigStep          one knot to the next under a commanded velocity (slew at max_accel).
//   appendBrake / appendMove / appendHold   the pieces plans are made of.
#pragma once

#include <Eigen/Core>

#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct RigTrajectory {
  double dt_s = 0.02;
  Eigen::MatrixXd position;  // K x n_k setpoints (m or rad)
  Eigen::MatrixXd velocity;  // K x n_k rates (per second)

  RigTrajectory() = default;
  // One knot at rest at rho (n_k).
  RigTrajectory(double dt, const Eigen::VectorXd& rho);
  int knots() const { return static_cast<int>(position.rows()); }
  double duration_s() const { return (knots() - 1) * dt_s; }
  void append(const Eigen::VectorXd& rho, const Eigen::VectorXd& rho_dot);
  // n more knots (unset), allocated at once; the first new one's index.
  int extend(int n);
  Eigen::VectorXd lastPosition() const { return position.row(knots() - 1).transpose(); }
  Eigen::VectorXd lastVelocity() const { return velocity.row(knots() - 1).transpose(); }
  // The setpoints at time t (held constant after the end).
  Eigen::VectorXd at(double t_s) const;
  // Samples at rate_hz from t = 0 to the first sample at or after the end (N x n_k).
  Eigen::MatrixXd resample(double rate_hz) const;
};

// One knot ahead: every rate moves toward cmd (n_k, clamped to +-max_speed) by at most
// max_accel dt, and the setpoint by the mean of the two rates times dt.  Pointers to n_k values;
// the outputs may alias the inputs.
void rigStep(const Model& model, const double* rho, const double* rho_dot, const double* cmd,
             double dt_s, double* rho_next, double* rho_dot_next);

// Knots that bring every rate to zero at max_accel (none if already stopped).
void appendBrake(const Model& model, RigTrajectory& trajectory);
// The most knots one move may take (kMaxMove_s at a 0.6 ms step): a longer one (a slowdown and
// a step that stretch it) is refused, FieldError("target"), before anything is built.
constexpr double kMaxMoveKnots = 1e6;
// From a stopped last knot, a smooth move to target (n_k): the quintic time scaling
// s = 10 tau^3 - 15 tau^4 + 6 tau^5, as fast as the speed and acceleration limits divided by
// `slowdown` (>= 1) allow, in whole steps, ending stopped exactly at the target.  Allocated at
// once, and cancellable (cancel.hpp).
void appendMove(const Model& model, RigTrajectory& trajectory, const Eigen::VectorXd& target,
                double slowdown = 1.1);
// The shortest duration (s) of a quintic move by `delta` (n_k) with every variable within
// `fraction` of its speed and acceleration limits (max s' = 15/8 / T, max s'' = 10/sqrt(3) / T^2);
// variables that move by at most `ignore_below` do not count.  0 when none moves.
double quinticMoveDuration_s(const Model& model, const Eigen::VectorXd& delta,
                             double fraction = 1.0, double ignore_below = 0.0);
// The duration (s) of the move appendMove makes from a to b (n_k each) at step dt_s.
double moveDuration(const Model& model, const Eigen::VectorXd& a, const Eigen::VectorXd& b,
                    double dt_s, double slowdown = 1.1);

// Holds the last setpoints for at least `seconds` (whole steps).
void appendHold(RigTrajectory& trajectory, double seconds);

}  // namespace marionette

#pragma GCC visibility pop
