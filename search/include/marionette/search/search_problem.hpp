// SPDX-License-Identifier: BSD-3-Clause
// A motion search's problem as the tree search takes it, and what the search counts.
//
// Contents
//   TreeSearchProblem  model on its stage, start, goal, integrator step, seed, control holding.
//   SearchCounters     what the search did: propagations, collision checks, goal checks.
#pragma once

#include <Eigen/Core>
#include <limits>

#include "marionette/environments/collision.hpp"
#include "marionette/plan/goal_spec.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct TreeSearchProblem {
  CollisionModelPtr collision;  // the model on its stage (its model is the puppet)
  Eigen::VectorXd q0, qdot0;    // n_d: the start pose and joint velocities
  Eigen::VectorXd rho0;         // n_k: the start inputs (the rig at rest there)
  GoalSpec goal;
  double step_s = 0.02;  // integrator step (s)
  unsigned long seed = 1;
  // A control is held for min..max integration steps; the projection's cell along a goal point
  // (point goals) is point_cell_m (m).
  int min_control_steps = 2, max_control_steps = 15;
  double point_cell_m = 0.05;
  // The search hands its path to the optimizer (PlannerOptions::hand_off_to_optimizer): a
  // rest-of goal is then met once the inputs are the goal's, however the puppet still swings;
  // bringing it to its rest pose there is the optimizer's part.  Other goals are unchanged.
  bool rest_of_inputs_only = false;
};

struct SearchCounters {
  long propagations = 0;      // integrator steps
  long collision_checks = 0;  // states checked against the stage
  long motions = 0;           // goal checks (every planner checks each motion it adds, once)
  double best_goal_distance = std::numeric_limits<double>::infinity();
  bool goal_reached = false;  // some state met the goal (and brakes safely from it)
};

}  // namespace marionette

#pragma GCC visibility pop
