// SPDX-License-Identifier: BSD-3-Clause
// Internal: the search's state propagator.  A control u (n_k target rig velocities) held for
// `duration`: every integration step the rig slews toward u at its maximum acceleration
// (rigStep) and the variational integrator (`options`: its step, and the contacts of the search's
// collision model) steps the puppet to the new setpoints.  A step that
// fails (or is cancelled) gives a state of NaNs, which validity refuses: invalid, never wrong.
#pragma once

#include <ompl/control/SpaceInformation.h>
#include <ompl/control/StatePropagator.h>

#include "marionette/models/integrator.hpp"
#include "marionette/search/search_space.hpp"

namespace marionette::detail {

class Propagator : public ompl::control::StatePropagator {
 public:
  Propagator(const ompl::control::SpaceInformationPtr& si, ModelPtr model,
             const IntegratorOptions& options, SearchCounters& counters);
  void propagate(const ompl::base::State* state, const ompl::control::Control* control,
                 double duration, ompl::base::State* result) const override;
  bool canPropagateBackward() const override { return false; }

 private:
  ModelPtr model_;
  StateLayout layout_;
  SearchCounters& counters_;
  mutable VariationalIntegrator vi_;
  mutable State x_;
  mutable Eigen::VectorXd rho_next_, rhodot_next_;
  double dt_s_;
};

}  // namespace marionette::detail
