// SPDX-License-Identifier: BSD-3-Clause
// Checks a sampled input sequence against the rig's limits: actuator range, speed and
// acceleration (finite differences at the sample rate; the rig is taken to be at rest before
// the first sample and after the last, as an executor holds it).  Used by planners before they
// return a plan and by anything that sends inputs to hardware; rangeTolerance is the slack every
// check of a range allows.
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct LimitViolation {
  std::string variable;
  int sample = 0;     // row index (time = sample / rate)
  std::string limit;  // "range", "speed" or "acceleration"
  double value = 0.0;
  double bound = 0.0;
  std::string describe() const;  // "act_arm_l_len at sample 12: speed 0.41 > 0.3"
};

// How far outside a variable's range a value may sit and still count as within it: rel_tol of
// its range's largest bound (at least of 1).  A position read back through degrees or steps is
// not exact; every check of a range uses this.
double rangeTolerance(double lower, double upper, double rel_tol = 1e-6);
inline double rangeTolerance(const KinematicVariable& variable, double rel_tol = 1e-6) {
  return rangeTolerance(variable.lower, variable.upper, rel_tol);
}

// samples: N x n_k at rate_hz.  A value beyond a bound by more than rel_tol of the bound (plus
// float rounding) is a violation; at most one per variable and limit is reported (the worst).
// The rows before `first_checked` are the rig's history, not checked themselves: the speed and
// acceleration from them into the first checked row are (without any, the rig held still before
// the first row).
std::vector<LimitViolation> checkInputLimits(const Model& model, const Eigen::MatrixXd& samples,
                                             double rate_hz, double rel_tol = 1e-6,
                                             int first_checked = 0);

}  // namespace marionette

#pragma GCC visibility pop
