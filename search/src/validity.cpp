// SPDX-License-Identifier: BSD-3-Clause
#include "validity.hpp"

#include <cmath>

#include "state_space.hpp"

namespace marionette::detail {

Validity::Validity(const ompl::base::SpaceInformationPtr& si, const CollisionModelPtr& collision,
                   double dt_s, SearchCounters& counters)
    : ompl::base::StateValidityChecker(si),
      dt_s_(dt_s),
      model_(collision->model()),
      layout_(collision->model()),
      checker_(collision),
      counters_(counters) {
  q_.resize(model_.nq());
}

bool Validity::isValid(const ompl::base::State* state) const {
  const double* x = values(state);
  for (int i = 0; i < layout_.dim(); ++i)
    if (!std::isfinite(x[i])) return false;
  for (int i = 0; i < layout_.nd; ++i) {
    const JointLimit& lim = model_.dynamic[i].limit;
    // Stops are exact constraints (a hair of tolerance for the solver); a spring limit may be
    // entered by its softening depth, which is where its force is fully on.
    const double slack = lim.isSpring() ? lim.softening : 1e-6;
    const double q = x[layout_.q() + i];
    if (q < lim.lower - slack || q > lim.upper + slack) return false;
  }
  for (int i = 0; i < layout_.nk; ++i) {
    const KinematicVariable& kv = model_.kinematic[i];
    const double r = x[layout_.rho() + i], v = x[layout_.rhoDot() + i];
    if (r < kv.lower - 1e-9 || r > kv.upper + 1e-9) return false;
    // The rig must be able to stop inside its range: braking at max_accel from v (in whole
    // steps, as appendBrake does) travels at most v^2 / (2a) + |v| dt.
    const double stop = v * std::abs(v) / (2.0 * kv.max_accel) + v * dt_s_;
    if (r + stop < kv.lower - 1e-9 || r + stop > kv.upper + 1e-9) return false;
  }
  layout_.configuration(x, q_);
  ++counters_.collision_checks;
  return !checker_.inCollision(q_).in_collision;
}

}  // namespace marionette::detail
