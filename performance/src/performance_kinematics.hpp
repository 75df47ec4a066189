// SPDX-License-Identifier: BSD-3-Clause
// A performance's kinematic step at its key frames (performance.hpp, step 1; Egger 2013, §3.2,
// done on the model instead of by hand): per frame, the rig inputs whose rest pose puts the
// named points on their targets, by damped Gauss-Newton on the inputs from the last frame's
// (the rest pose followed by continuation, as the roadmap's goal search), clear of the stage.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <string>
#include <vector>

#include "marionette/environments/collision.hpp"
#include "marionette/plan/targets.hpp"

namespace marionette::detail {

struct KinematicFrame {
  Eigen::VectorXd rho;      // n_k
  Eigen::VectorXd q;        // n_d: its rest pose
  Eigen::VectorXd error_m;  // per target point: |point - target| (NaN without a target)
  double stage_clearance_m = 0.0;
  std::string nearest;     // the stage's nearest pair, described
  bool cut_short = false;  // the wall-clock cap (in_time) stopped its refinement
  bool probes_ran_out = false;  // the probes' budget ran out in this frame
};

struct KinematicSetup {
  ModelPtr model;
  CollisionModelPtr collision;
  double margin_m = 0.02;
  std::vector<int> disable;          // kept at the start's values
  Eigen::VectorXd start_inputs;      // n_k: the first frame's search starts here
  // Points without a target held near where they hang at the start inputs, each metre off it
  // weighing as sqrt(calm_weight) metres of a target's error: the inputs that move what no one
  // asked to move (a leg's string lifting the leg to tip the body into a bow) are the last used.
  std::vector<int> calm_points;  // model point indices
  double calm_weight = 0.0;
  // Probes where the descent stalls short of a frame's targets (each moves one input by 5 % of
  // its range either way and solves its rest pose; the best taken, the descent goes on): how
  // many rest poses they may solve over all the frames (0: none).
  int probe_rest_poses = 0;
  // A wall-clock cap, not a budget (the frames' iterations are counted): false stops refining;
  // each frame keeps its best so far and says it was cut short.
  std::function<bool()> in_time;
};

// `keys` sampled at the key rate, in the model's world frame (points) with their variable
// targets (dynamic variables pulled toward, inputs set).  One frame per key row.
std::vector<KinematicFrame> solveKeyFrames(const KinematicSetup& setup, const TargetMotion& keys);
// The frames marked in `refine` solved again for new targets (`keys`, the same frames), each
// from its own solution; the others kept as they are (their error_m is then the old targets').
std::vector<KinematicFrame> refineKeyFrames(const KinematicSetup& setup, const TargetMotion& keys,
                                            const std::vector<KinematicFrame>& frames,
                                            const std::vector<char>& refine);

}  // namespace marionette::detail
