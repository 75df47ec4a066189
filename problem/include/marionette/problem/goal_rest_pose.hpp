// SPDX-License-Identifier: BSD-3-Clause
// Collision-free rest poses that meet a goal: the roadmap's query phase finds them from its
// vertices when none of them does (the query-phase expansion of Esteves, Arechavaleta & Laumond,
// "Motion Planning for Human-Robot Interaction in Manipulation Tasks", IEEE ICMA 2005), and the
// trajectory optimizer from a plan's ends.
//
// Contents
//   RestVertex      inputs and their rest pose.
//   restVertex()    the collision-free rest pose of given inputs.
//   descendToGoal() / randomDescent()   a rest pose within an error of the goal, from a vertex.
#pragma once

#include <functional>
#include <optional>
#include <random>

#include "marionette/environments/collision.hpp"
#include "marionette/plan/goal.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct RestVertex {
  Eigen::VectorXd rho;  // n_k inputs
  Eigen::VectorXd q;    // n_d their rest pose
};

// A rest pose of rho (n_k) that is collision-free, or nullopt; `guess` (n_d) seeds the solve.
std::optional<RestVertex> restVertex(const ModelPtr& model, CollisionChecker& checker,
                                                  const Eigen::VectorXd& rho,
                                                  const Eigen::VectorXd* guess);

// A collision-free rest pose whose goal error is at most `aim`, by damped Gauss-Newton
// (Levenberg-Marquardt) on the inputs from the rest vertex `from`; nullopt if the error stops
// falling first or when `in_time` says stop.
std::optional<RestVertex> descendToGoal(const ModelPtr& model,
                                                     CollisionChecker& checker, GoalEvaluator& goal,
                                                     const RestVertex& from,
                                                     double aim,
                                                     const std::function<bool()>& in_time);

// The same by a local random search, for when Gauss-Newton stalls.
std::optional<RestVertex> randomDescent(const ModelPtr& model,
                                                     CollisionChecker& checker, GoalEvaluator& goal,
                                                     RestVertex from, double aim,
                                                     std::mt19937_64& rng,
                                                     const std::function<bool()>& in_time);

}  // namespace marionette

#pragma GCC visibility pop
