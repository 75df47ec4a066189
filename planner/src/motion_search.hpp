// SPDX-License-Identifier: BSD-3-Clause
// Internal: one interface for a motion search, with a tree-search (OMPL) and a roadmap
// implementation.  planMotion validates the request, runs the search the planner table names,
// then resamples and verifies what it found.
#pragma once

#include <memory>
#include <string>

#include "marionette/plan/goal.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/models/rig_trajectory.hpp"
#include "marionette/search/registry.hpp"
#include "marionette/search/tree_search.hpp"

namespace marionette::detail {

struct SearchProblem {
  const PlanRequest& request;
  const CollisionModelPtr& collision;
  const StartState& start;      // at the start inputs
  const Eigen::VectorXd& rho0;  // n_k start inputs
  GoalEvaluator& goal;
  const ProgressFn& progress;
  const CancelFn& cancelled;
};

class MotionSearch {
 public:
  virtual ~MotionSearch() = default;
  // Throws PlanCancelled when `cancelled` says stop, FieldError on a bad planner parameter.
  virtual SearchResult search(const SearchProblem& problem) = 0;
};

std::unique_ptr<MotionSearch> makeMotionSearch(const PlannerInfo& planner);

}  // namespace marionette::detail
