// SPDX-License-Identifier: BSD-3-Clause
// Where a puppet's named points can go (`marionette reach`; docs/performance.md, "Reach"): before
// one writes keyframes, the places each point can be held still and those it passes through
// when the rig swings it.
//
//   held:  rig inputs spread over their whole box (a Halton sequence: the same points on any
//          machine), each one's rest pose standing on what the puppet may touch, kept when
//          collision-free; the points' positions in it.
//   swung: from one held pose to another, the rig moved as fast as its limits let it (a
//          smoothstep no faster than any input's speed or acceleration limit), then held a
//          second; the points' positions along the simulated motion (the midpoint VI, touching
//          as plans do).
//
// Contents
//   ReachOptions   how many poses and swings, the seed offset, the hold after a swing.
//   PointReach     one point's clouds, where it hangs at rest, and their extents.
//   Reach          every asked point's, and what was dropped (no rest pose, in collision, a
//                  failed swing).
//   computeReach   the clouds.
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "marionette/environments/collision.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct ReachOptions {
  int poses = 200;      // rig inputs tried for the held cloud, in [1, 100000]
  int swings = 40;      // swings between held poses, in [0, 10000]
  int skip = 20;        // Halton points skipped first (another value: another spread)
  double hold_s = 1.0;  // the hold after a swing, in [0, 10] s
  double dt_s = 0.02;   // the swing's step and sampling, in [0.001, 0.1] s
  // The most samples the swings may hold a point (48 MB of it): more swings, longer ones (slow
  // inputs) or a finer dt_s that would exceed it are refused before the first swing.
  static constexpr double kMaxSwungSamples = 2e6;
};

struct PointReach {
  std::string point;
  Eigen::Vector3d rest_m = Eigen::Vector3d::Zero();  // at rest at the default inputs (stage)
  Eigen::Matrix3Xd held_m;                           // stage coordinates, one column a pose
  Eigen::Matrix3Xd swung_m;                          // stage coordinates, one column a sample
  // Extents (stage axes): the smallest and largest coordinates of each cloud.
  Eigen::Vector3d held_min_m, held_max_m, swung_min_m, swung_max_m;
};

struct Reach {
  std::vector<PointReach> points;
  int poses_tried = 0, poses_held = 0;
  int no_rest_pose = 0;                     // inputs without a rest pose
  int in_collision = 0;                     // rest poses in collision with the stage or itself
  int swings_tried = 0, swings_failed = 0;  // a failed step ends that swing (its samples kept)
};

// `collision`: the model on its scene (touching its contacts, problemCollisionOptions).  Throws
// FieldError for an unknown point ("points[1]"), a bad option ("options.poses"), and
// PlanCancelled when `cancelled` says stop.
Reach computeReach(const CollisionModelPtr& collision, const std::vector<std::string>& points,
                   const ReachOptions& options = {}, const CancelFn& cancelled = {});

}  // namespace marionette

#pragma GCC visibility pop
