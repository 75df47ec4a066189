// SPDX-License-Identifier: BSD-3-Clause
// Internal: the search's state and control spaces.
//
// Distance: each component divided by its scale, momentum and rig rates down-weighted, so that
// pose dominates (Johnson & Murphey, ICRA 2007 §VII measure nearness by configuration).  Bounds:
// joint limits (or a turn, or 1.5 m, about the start where a joint has none), momenta within 6
// times the row sums of the mass matrix at the start (6 rad/s or m/s per joint: generous for a
// swinging puppet; they only shape sampling), the actuators' ranges and speeds.  Samplers draw
// from the request's SeedSequence.
#pragma once

#include <ompl/base/spaces/RealVectorStateSpace.h>
#include <ompl/control/spaces/RealVectorControlSpace.h>

#include <Eigen/Core>
#include <functional>
#include <limits>
#include <memory>

#include "marionette/models/model.hpp"
#include "marionette/search/state_layout.hpp"

namespace marionette::detail {

inline double* values(ompl::base::State* s) {
  return s->as<ompl::base::RealVectorStateSpace::StateType>()->values;
}
inline const double* values(const ompl::base::State* s) {
  return s->as<ompl::base::RealVectorStateSpace::StateType>()->values;
}
inline double* values(ompl::control::Control* u) {
  return u->as<ompl::control::RealVectorControlSpace::ControlType>()->values;
}
inline const double* values(const ompl::control::Control* u) {
  return u->as<ompl::control::RealVectorControlSpace::ControlType>()->values;
}

class MarionetteSpace : public ompl::base::RealVectorStateSpace {
 public:
  MarionetteSpace(const StateLayout& layout, Eigen::VectorXd scale);
  double distance(const ompl::base::State* a, const ompl::base::State* b) const override;
  // The square of distance(x, y), summed component by component in the same order (so the same
  // bits); once the sum passes `stop_above` the rest is not added, and what is returned is
  // only known to exceed it.
  double squaredDistance(const double* x, const double* y,
                         double stop_above = std::numeric_limits<double>::infinity()) const;
  double getMaximumExtent() const override;
  const Eigen::VectorXd& scale() const { return scale_; }

 private:
  Eigen::VectorXd scale_;  // per component: the length that counts as distance 1
};

// The state space of `model` about the start (q0: n_d, rho0: n_k), bounds and scales set; its
// samplers seeded by `next_seed` (called under omplSeedMutex()).
std::shared_ptr<MarionetteSpace> makeStateSpace(const Model& model, const Eigen::VectorXd& q0,
                                                const Eigen::VectorXd& rho0,
                                                std::function<std::uint_fast32_t()> next_seed);

// Target rig velocities within +-max_speed (+-1 where a kinematic variable has none); samplers
// as above.
std::shared_ptr<ompl::control::RealVectorControlSpace> makeControlSpace(
    const Model& model, const std::shared_ptr<MarionetteSpace>& space,
    std::function<std::uint_fast32_t()> next_seed);

}  // namespace marionette::detail
