// SPDX-License-Identifier: BSD-3-Clause
// Retargeting a human clip onto a puppet (docs/performance.md, "BVH and maps"): which BVH joint
// drives which puppet point, how the clip's axes and units become the stage's, the scale from
// the human's size to the puppet's, and what becomes of the clip's root motion.
//
// Each mapped point follows its joint's displacement, scaled, from where the puppet's point
// hangs at rest:
//   target_i(t) = rest_i + s_i A (d_i(t) - d_i(t_0)) [+ the root's, when kept],
//   d_i = joint_i - anchor_i (its limb's base joint, or the root),
// with A the clip's axes turned so that the human faces the puppet's +x at t_0 (Egger's
// eqs. 3.1-3.3 on the left and right joints named by `facing`), and s_i the scale.  Components
// a puppet's limb cannot follow (PuppetCopter's legs swing in one plane) stay at rest.
//
// Contents
//   RetargetMap         the map (YAML: docs/performance.md).
//   parseRetargetMap    a map file's text (PerformanceFileError naming line and field).
//   builtinRetargetMap  the built-in map of puppetcopter or marionette25 (nullopt for others).
//   retargetBvh         a clip to target tracks for a model.
#pragma once

#include <Eigen/Core>
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "marionette/models/model.hpp"
#include "marionette/performance/bvh.hpp"
#include "marionette/plan/targets.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct RetargetMap {
  std::string source;
  std::string model;  // the model it was written for ("" = any)
  double units_m = 1.0;  // one BVH length unit in metres
  // Stage x, y, z as the clip's signed axes: 0..2 = X, Y, Z, and a sign (+-1).  BVH is y up;
  // the CMU clips face +Z with their left at +X: stage (x, y, z) = (Z, X, Y).
  std::array<int, 3> axes = {2, 0, 1};
  std::array<double, 3> signs = {1, 1, 1};
  std::string root = "Hips";
  bool keep_root = false;       // root motion kept (scaled, within +-root_box_m) or removed
  double root_box_m = 0.3;      // the kept root's reach from where the puppet hangs
  std::pair<std::string, std::string> facing = {"LeftHip", "RightHip"};  // left, right joints
  double scale = 0.0;  // human -> puppet; 0 = auto: the puppet's height / the human's over the
                       // mapped points (their vertical extents, at rest and at t_0)
  struct PointMap {
    std::string point;   // the puppet's named point
    std::string joint;   // the BVH joint (an End Site: "<joint>/end") that drives it
    std::string anchor;  // its displacement is taken from this joint's ("" = the root's)
    std::array<bool, 3> follow = {true, true, true};  // stage x, y, z followed (else at rest)
    double scale = 0.0;  // 0 = the map's
  };
  std::vector<PointMap> points;
};

RetargetMap parseRetargetMap(const std::string& text, const std::string& source);
std::optional<RetargetMap> builtinRetargetMap(const std::string& model_name);

// The clip as target tracks at its frame times (from 0), referenced to its first frame.
// `rest_points` (3 x n_points, Model::points order, stage coordinates) are where the model's
// points hang at rest.
TargetMotion retargetBvh(const BvhClip& clip, const Model& model, const RetargetMap& map,
                         const Eigen::Matrix3Xd& rest_points);

}  // namespace marionette

#pragma GCC visibility pop
