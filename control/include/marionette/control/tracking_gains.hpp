// SPDX-License-Identifier: BSD-3-Clause
// What a plan carries of its feedback: the LQR's weights and the time-varying gains computed with
// them (tracking_lqr.hpp computes them; a light header, Eigen only, for plans and their files).
//
// Contents
//   LqrWeights      the cost: joint position and velocity errors, the rig's deviation, the
//                   correction; a terminal factor.
//   weightFields    the weights by name (plan files, the proto, flags); checkLqrWeights and its
//                   bounds kMaxLqrWeight, kMinCorrectionWeight.
//   TrackingGains   K_k for every step: u_{k+1} = u_ref_{k+1} - K_k s_k.
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <utility>
#include <vector>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette::control {

struct LqrWeights {
  double position = 1e4;    // per (m or rad)^2 of each joint's error
  double velocity = 1e1;    // per (m/s or rad/s)^2 of each joint's velocity error
  double rig = 1e2;         // per (m or rad)^2 of each rig input's deviation from the plan
  double correction = 1e2;  // per (m or rad)^2 of each setpoint's correction u - u_ref
  // Per (m/s or rad/s)^2 of the speed at which a correction changes, (du_k - drho_k) / dt: a
  // rig that jumps its setpoints is what its speed and acceleration limits forbid.
  double correction_rate = 1e1;
  // Per (m/s^2 or rad/s^2)^2 of the correction's acceleration, (du_k - 2 drho_k +
  // drho_{k-1}) / dt^2.
  double correction_accel = 1.0;
  double terminal = 10.0;  // the last state's cost is this times a step's
  bool operator==(const LqrWeights& o) const;
  bool operator!=(const LqrWeights& o) const { return !(*this == o); }
};

// Each weight with its name ("position", "velocity", "rig", "correction", "correction_rate",
// "correction_accel", "terminal"), in that order.
std::vector<std::pair<const char*, double*>> weightFields(LqrWeights& w);
std::vector<std::pair<const char*, double>> weightFields(const LqrWeights& w);
// Every weight is in [0, kMaxLqrWeight], correction in [kMinCorrectionWeight, kMaxLqrWeight]:
// within them the Riccati recursion stays finite at any rate up to 1 kHz (its largest term,
// correction_accel / dt^4, is then at most 1e21).
constexpr double kMaxLqrWeight = 1e9;
constexpr double kMinCorrectionWeight = 1e-9;
// Throws FieldError naming a weight outside its range.
void checkLqrWeights(const LqrWeights& w);

struct TrackingGains {
  double dt_s = 0.0;
  LqrWeights weights;
  std::vector<Eigen::MatrixXd> K;  // N - 1 gains, n_k x n_s
  bool empty() const { return K.empty(); }
  // -K_k (deviation, previous_rig_deviation): what step k adds to the plan's next setpoints.
  Eigen::VectorXd correction(std::size_t k, const Eigen::VectorXd& deviation,
                             const Eigen::VectorXd& previous_rig_deviation) const;
};

}  // namespace marionette::control

#pragma GCC visibility pop
