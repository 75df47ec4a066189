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

// The search settings that are ours, not the OMPL planner's: control durations (integration
// steps) and the projection's cell size along a goal point (m): the options' where they set
// them, else the planner's defaults (its PlannerInfo).
struct TreeSearchSettings {
  int min_control_steps = 2, max_control_steps = 15;
  double point_cell_m = 0.05;
};
TreeSearchSettings treeSearchSettings(const PlannerOptions& options);

class MotionSearch {
 public:
  virtual ~MotionSearch() = default;
  // Throws PlanCancelled when `cancelled` says stop, FieldError on a bad planner parameter.
  virtual SearchResult search(const SearchProblem& problem) = 0;
};

std::unique_ptr<MotionSearch> makeMotionSearch(const PlannerInfo& planner);

}  // namespace marionette::detail
