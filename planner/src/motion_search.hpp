// SPDX-License-Identifier: BSD-3-Clause
// Internal: one interface for a motion search, with a tree-search (OMPL) and a roadmap
// implementation.  planMotion validates the request, runs the search the planner table names,
// then resamples and verifies what it found.
#pragma once

#include <memory>
#include <string>

#include "marionette/planner/goal.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/planner/planners.hpp"
#include "marionette/planner/rig_trajectory.hpp"

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

struct SearchResult {
  bool found = false;    // some path (exact or approximate)
  RigTrajectory inputs;  // the rig's motion at the planning step, ending stopped
  std::string message;   // why not exact, when it is not
  PlanStatistics stats;  // the search's part: planning time, counts, best goal distance
};

class MotionSearch {
 public:
  virtual ~MotionSearch() = default;
  // Throws PlanCancelled when `cancelled` says stop, FieldError on a bad planner parameter.
  virtual SearchResult search(const SearchProblem& problem) = 0;
};

std::unique_ptr<MotionSearch> makeMotionSearch(const PlannerInfo& planner);

}  // namespace marionette::detail
