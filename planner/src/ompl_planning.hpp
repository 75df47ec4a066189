// Internal: the OMPL control-planning glue (state space, controls, propagator, validity, goal,
// projection) and the search with one of OMPL's tree planners.
#pragma once

#include <map>
#include <string>

#include "marionette/planner/planner.hpp"
#include "marionette/planner/rig_trajectory.hpp"

namespace marionette::detail {

struct SearchResult {
  bool found = false;  // some path (exact or approximate)
  bool exact = false;
  double goal_distance = 0.0;
  RigTrajectory inputs;  // the path's rig motion at the planning step, braked to a stop
  long propagations = 0, collision_checks = 0, tree_states = 0;
  double time_s = 0.0;
  std::string message;
};

bool isTreePlanner(const std::string& name);
std::map<std::string, std::string> treePlannerParameters(const std::string& name);

// The search settings that are ours, not the OMPL planner's: control durations (integration
// steps) and the projection's cell size along a goal point (m).
struct TreeSearchSettings {
  int min_control_steps = 2, max_control_steps = 15;
  double point_cell_m = 0.05;
};
TreeSearchSettings treeSearchSettings(const PlannerOptions& options);

// Throws std::invalid_argument for an unknown planner or parameter.
SearchResult searchTree(const PlanRequest& request, const CollisionModelPtr& collision,
                        const Eigen::VectorXd& q0, const Eigen::VectorXd& qdot0,
                        const Eigen::VectorXd& rho0, const GoalSpec& goal,
                        const ProgressFn& progress, const CancelFn& cancelled);

}  // namespace marionette::detail
