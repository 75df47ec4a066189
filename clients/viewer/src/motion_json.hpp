// SPDX-License-Identifier: BSD-3-Clause
// Internal: one motion's members of the view document.  view_json.cpp writes them at the top
// level for the motion shown, and again under "compare" for a second motion drawn as a ghost;
// the page reads both with the same code.
#pragma once

#include <Eigen/Geometry>
#include <ostream>
#include <vector>

#include "marionette/viewer/view.hpp"

namespace marionette::viewer {

// The frames that carry link geometry, in model order: the document's "frames", whose poses
// every row of "frame_poses" holds.
std::vector<int> linkFrames(const Model& model);

// Writes, without braces, the members
//   "title", "name", "info" ([key, value, bad]: the facts, then the problems, a collision
//   first), "quality" ([label, value]), "rate_hz", "t", "frame_poses" (N rows of 7 numbers per
//   link frame), "string_ends" (N rows of 6 per string: puppet end, rig end), "string_lengths",
//   "tensions" {names, samples}, "inputs" {names, units, samples}, "points" [{name, path}],
//   "targets", "performance" {names, samples: rows of 3 per name, null where none},
//   "contacts" {names, normal, friction: N rows of one force per pair (N), at: N rows of 6 per
//   pair, the point of contact and the unit direction its normal force pushes},
//   "clearance" ({samples, stage_samples, min_index, stage_min_index} with a scene,
//   else null), "collision" {first_index, pair}, "goal_index"
// in stage coordinates, and grows `extent` by every link frame and rig point it passes.  Throws
// ViewError when the motion's sizes do not fit the model.
void writeMotionMembers(const ModelPtr& model, const ScenePtr& scene,
                        const std::vector<int>& link_frames, const Motion& motion,
                        Eigen::AlignedBox3d& extent, std::ostream& os);

}  // namespace marionette::viewer
