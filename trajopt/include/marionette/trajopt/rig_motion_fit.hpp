// SPDX-License-Identifier: BSD-3-Clause
// The rig's motion nearest to wanted inputs that the rig can perform: per input a uniform cubic
// B-spline over the motion that starts and ends at rest (the optimizer's parameterization of the
// rig's inputs, docs/design.md), fitted in the least-squares sense (each input's error relative
// to its range) within a share of every range, speed and acceleration limit, between samples
// too: a convex QP, solved by Ipopt.  A performance's kinematic step time-parameterizes its key
// frames with it.
//
// Contents
//   RigMotionFit   the fitted inputs within the limits, and the nearest spline without them.
//   fitRigMotion   the fit.
#pragma once

#include <Eigen/Core>

#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct RigMotionFit {
  Eigen::MatrixXd inputs;         // S rows of n_k at the wanted rate, within the limits
  Eigen::MatrixXd unconstrained;  // S rows of n_k: the nearest spline, the limits aside
  bool converged = true;  // false: Ipopt's best point, which meets the limits to its tolerance
};

// wanted: S >= 2 rows of n_k at rate_hz from `start` (n_k inputs, where the motion starts at
// rest); segments: the spline's pieces over the motion (>= 3); share: of each limit, in (0, 1].
// Throws std::invalid_argument when the sizes do not fit; PlanCancelled when the thread's
// CancelScope says stop.
RigMotionFit fitRigMotion(const Model& model, const Eigen::VectorXd& start,
                          const Eigen::MatrixXd& wanted, double rate_hz, int segments,
                          double share);

}  // namespace marionette

#pragma GCC visibility pop
