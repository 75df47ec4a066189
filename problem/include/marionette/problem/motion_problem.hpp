// SPDX-License-Identifier: BSD-3-Clause
// A motion problem: a puppet on a stage, where it starts and what it must reach.  Every plan,
// whoever makes it (a tree search, the roadmap, the optimizer, a performance, a user's inputs),
// answers one, and is judged against it (verification.hpp).
//
// Contents
//   MotionProblem    model, scene (or its collision model), start inputs and start, goal.
//   ResolvedProblem  what a problem resolves to: the collision model, the start inputs and
//                    state, checked.
//   checkGoal()      the goal against the model and the stage.
//   resolveProblem() resolves and checks a problem, naming the field that is wrong.
#pragma once

#include <Eigen/Core>
#include <string>

#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/model.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/plan/goal_spec.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct MotionProblem {
  ModelPtr model;
  ScenePtr scene;                   // null = the empty stage
  CollisionModelPtr collision;      // optional: collisionModelOf builds it when null
  Eigen::VectorXd start_inputs;     // n_k rig setpoints at the start; empty = defaults
  StartSpec start;                  // rest pose of start_inputs, optionally with joints set
  std::string start_text = "rest";  // for the plan's record
  GoalSpec goal;
};

struct ResolvedProblem {
  CollisionModelPtr collision;  // the problem's, or the model on its scene (or the empty stage)
  Eigen::VectorXd rho0;         // n_k start inputs, within their ranges
  StartState start;             // at rho0
};

// Throws FieldError naming the goal's field: names the model does not have, values out of
// range, unreachable rest-of inputs ("goal.values[\"theta9\"]"), a point target outside the
// stage's bounds ("goal.points[1].position_m").
void checkGoal(const ModelPtr& model, const GoalSpec& goal, const Scene& scene);

// Throws FieldError naming the field: "model" (none), "start_inputs" (size, range), "goal..."
// (checkGoal), "start" (no rest pose, joints that the model
// does not have, or in collision when `start_clear` is set).
ResolvedProblem resolveProblem(const MotionProblem& problem, bool start_clear = true);

// The options a problem's collision model is built with: the puppet touches the scene's contact
// surfaces and its own links (touch_contact_surfaces), and every simulation that judges a plan
// carries them as contacts (CollisionModel::contacts).
CollisionOptions problemCollisionOptions();

// The problem's collision model: its own, or the model on its scene (the empty stage when none)
// with problemCollisionOptions().
CollisionModelPtr collisionModelOf(const MotionProblem& problem);

}  // namespace marionette

#pragma GCC visibility pop
