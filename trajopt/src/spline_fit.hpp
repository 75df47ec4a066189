// SPDX-License-Identifier: BSD-3-Clause
// The input spline (input_spline.hpp) nearest to sampled inputs, in the least-squares sense
// (each input's error relative to its range), within every speed, acceleration and range
// limit: a convex QP, solved by the interior point (interior_point.hpp).  The kinematic step of
// a performance uses it to time-parameterize its key frames within the rig's limits.
#pragma once

#include <Eigen/Core>

#include "input_spline.hpp"
#include "nlp_solve.hpp"
#include "marionette/models/model.hpp"

namespace marionette::detail {

// samples: spline.samples() rows of n_k.  share: the limits' share kept (as limitRows).
// Returns the variables z; `converged` says whether the solver met its tolerance (else the best
// point it reached).  `solver`: Ipopt is its cross-check in the tests.  PlanCancelled when the
// thread's CancelScope says stop.
Eigen::VectorXd fitWithinLimits(const InputSpline& spline, const Model& model,
                                const Eigen::MatrixXd& samples, double share,
                                bool* converged = nullptr,
                                NlpSolver solver = NlpSolver::kInteriorPoint);

}  // namespace marionette::detail
