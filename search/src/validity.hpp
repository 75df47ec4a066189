// SPDX-License-Identifier: BSD-3-Clause
// Internal: the search's state validity.  Valid: every number finite (the integrator converged),
// the joints inside their limits (a stop exactly, a spring limit by its softening depth, where
// its force is fully on), the rig inside its ranges with room to brake from its rates, and no
// collision of links or strings with the stage or each other.
#pragma once

#include <ompl/base/StateValidityChecker.h>

#include "marionette/environments/collision.hpp"
#include "marionette/search/search_space.hpp"

namespace marionette::detail {

class Validity : public ompl::base::StateValidityChecker {
 public:
  Validity(const ompl::base::SpaceInformationPtr& si, const CollisionModelPtr& collision,
           double dt_s, SearchCounters& counters);
  bool isValid(const ompl::base::State* state) const override;

 private:
  double dt_s_;
  const Model& model_;
  StateLayout layout_;
  mutable CollisionChecker checker_;
  SearchCounters& counters_;
  mutable Eigen::VectorXd q_;
};

}  // namespace marionette::detail
