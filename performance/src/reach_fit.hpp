// SPDX-License-Identifier: BSD-3-Clause
// Retargeting into reach (docs/performance.md, "Retargeting into reach"; after Hoshyari et al.,
// "Vibration-Minimizing Motion Retargeting for Robotic Characters", ACM TOG 38(4), 2019: fit the
// artist's motion to what the character can do, keeping its style).
//
// The kinematic step finds, at each key frame, the rest pose nearest to the targets: where each
// point can be held.  A point held within the tolerance of its clip at every key frame keeps its
// clip.  Another's clip is fitted to where it was held, one scale per stage axis from where the
// puppet starts (the first key frame, t_0):
//   fitted_a(t) = held_a(t_0) + scale_a (clip_a(t) - clip_a(t_0)),   0 <= scale_a <= 1,
// scale_a by least squares over the key frames: the timing and the relative amplitudes along
// each axis are the clip's, its reach the puppet's.  (One scale cannot match a reach that cuts
// the clip off, a saturation: the fit then passes the cut a little, and the rest is reported as
// targets not followed.)  The fitted tracks are what the dynamics step follows
// and what the plan is measured against; their distance from the clip is reported.
//
// Contents
//   ReachFit       one point's map (or none: its clip kept), and what it says.
//   fitIntoReach   the maps, from the clip and the held points at the key frames.
//   applyReachFit  a motion's tracks through the maps.
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "marionette/plan/targets.hpp"

namespace marionette::detail {

struct ReachFit {
  bool fitted = false;  // false: held within the tolerance throughout, the clip kept
  Eigen::Array3d scale = Eigen::Array3d::Ones();     // per stage axis, in [0, 1]
  Eigen::Array3d offset_m = Eigen::Array3d::Zero();  // fitted = offset_m + scale clip
  // How much of the clip's motion the fit keeps: the rms of the fitted track's displacement from
  // t_0 over the clip's, at the key frames (1 when not fitted); and how far the clip moves from
  // t_0 at most (m).
  double kept = 1.0;
  double clip_motion_m = 0.0;
  // "x x0.55, z x0.30, 4.0 cm lower": the map, for messages (empty when not fitted).
  std::string describe(const Eigen::Vector3d& clip_mean_m) const;
};

// `keys`: the clip's tracks at the key frames (stage coordinates); `held_m`: the puppet's
// points at those frames (F x 3P, the same points in the same order, stage coordinates).  One
// fit per point of `keys`.
std::vector<ReachFit> fitIntoReach(const TargetMotion& keys, const Eigen::MatrixXd& held_m,
                                   double tolerance_m);

// `motion`'s point tracks mapped by `fits` (one per point); NaN stays NaN.
TargetMotion applyReachFit(const TargetMotion& motion, const std::vector<ReachFit>& fits);

}  // namespace marionette::detail
