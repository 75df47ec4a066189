// SPDX-License-Identifier: BSD-3-Clause
// A warm start that passes the folds: a path of rest poses from the start's to one that meets the
// goal, continuous (no fold: along each straight move of the inputs the rest pose, followed by
// continuation, never jumps) and clear of the stage and of everything with margin.  A slow motion
// along it is nearly stage-worthy by construction, and the transcription retimes it.
//
// Found by a rapidly-exploring random tree over the rig inputs (LaValle & Kuffner, "Randomized
// Kinodynamic Planning", IJRR 2001) whose vertices are rest poses, each reached by continuation
// from its parent's: the rest-pose space the roadmap of Esteves, Arechavaleta & Laumond (IEEE
// ICMA 2005) samples, searched here quasi-statically (no simulation of the swing), with a bias
// towards the goal's inputs and a straight connection tried first and from every new vertex;
// then shortcut.
// Its work is counted in rest poses solved, never in seconds.
//
// Contents
//   RestPosePathSetup   the margins, the fold test, the resolution and the budget
//   RestPosePath        the waypoints and their rest poses, or why none
//   searchRestPosePath
//   restPoseMotion      the waypoints as rig inputs at a rate: a smooth stop at each
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "marionette/environments/collision.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/problem/goal_rest_pose.hpp"

namespace marionette::detail {

struct RestPosePathSetup {
  CollisionModelPtr collision;
  double stage_margin_m = 0.03;  // every rest pose this clear of the stage
  double margin_m = 0.0075;      // and of anything
  double max_step = 0.1;         // largest change of a rest pose's variable between sub-steps
                                 // (rad or m) that is not a jump
  double resolution = 0.02;      // sub-step: this share of each input's range at most
  double extend = 0.2;           // a tree edge: this share of the ranges at most (Euclidean)
  double goal_bias = 0.2;        // share of the samples that are the goal's inputs
  long max_rest_poses = 3000;    // the budget: rest poses solved by the tree (the shortcut
                                 // then at most as many again)
  unsigned long seed = 1;
};

struct RestPosePath {
  std::vector<Eigen::VectorXd> inputs;  // waypoints: the start's inputs first, the last a rest
                                        // pose that meets the goal
  std::vector<Eigen::VectorXd> poses;   // their rest poses (n_d)
  long rest_poses = 0;                  // work done
  std::string message;                  // why there is none (inputs empty)
};

// From `start` (its rest pose, clear with margin) towards `goal_inputs` (a rest pose there meets
// the goal), until a vertex's rest pose is within `aim` of `goal`.  Polls the thread's
// CancelScope.
RestPosePath searchRestPosePath(const RestPosePathSetup& setup, const RestVertex& start,
                                const Eigen::VectorXd& goal_inputs, GoalEvaluator& goal,
                                double aim);

// The path's inputs at rate_hz: from each waypoint to the next a quintic move at the speed and
// acceleration limits divided by `slowdown`, stopping at each.
Eigen::MatrixXd restPoseMotion(const Model& model, const RestPosePath& path, double rate_hz,
                               double slowdown);

}  // namespace marionette::detail
