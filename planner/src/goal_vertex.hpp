// SPDX-License-Identifier: BSD-3-Clause
// Internal to the roadmap's query phase: rest poses that meet a goal, found from the roadmap's
// vertices when none of them does (the query-phase expansion of Esteves, Arechavaleta &
// Laumond, "Motion Planning for Human-Robot Interaction in Manipulation Tasks", IEEE ICMA 2005).
#pragma once

#include <functional>
#include <optional>
#include <random>

#include "marionette/environments/collision.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/planner/roadmap.hpp"

namespace marionette::roadmap {

// A rest pose of rho (n_k) that is collision-free, or nullopt; `guess` (n_d) seeds the solve.
std::optional<RestPoseRoadmap::Vertex> restVertex(const ModelPtr& model, CollisionChecker& checker,
                                                  const Eigen::VectorXd& rho,
                                                  const Eigen::VectorXd* guess);

// A collision-free rest pose whose goal error is at most `aim`, by damped Gauss-Newton
// (Levenberg-Marquardt) on the inputs from the rest vertex `from`; nullopt if the error stops
// falling first or when `in_time` says stop.
std::optional<RestPoseRoadmap::Vertex> descendToGoal(const ModelPtr& model,
                                                     CollisionChecker& checker, GoalEvaluator& goal,
                                                     const RestPoseRoadmap::Vertex& from,
                                                     double aim,
                                                     const std::function<bool()>& in_time);

// The same by a local random search, for when Gauss-Newton stalls.
std::optional<RestPoseRoadmap::Vertex> randomDescent(const ModelPtr& model,
                                                     CollisionChecker& checker, GoalEvaluator& goal,
                                                     RestPoseRoadmap::Vertex from, double aim,
                                                     std::mt19937_64& rng,
                                                     const std::function<bool()>& in_time);

}  // namespace marionette::roadmap
