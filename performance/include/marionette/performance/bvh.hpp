// SPDX-License-Identifier: BSD-3-Clause
// BVH motion capture (Biovision hierarchy; Meredith and Maddock, "Motion capture file formats
// explained", University of Sheffield, 2001): the skeleton, the channels, and each joint's
// position in every frame.  Read by a small parser of our own rather than assimp's importer,
// because a bad file's error must name its line and field, which assimp's importer does not
// report; the tests check this parser's joint positions against assimp's reading of the same
// clip.
//
// Contents
//   BvhJoint         a joint (or an End Site): parent, offset, channels.
//   BvhClip          the skeleton and its motion (frames x channels).
//   parseBvh         the text of a .bvh file into a clip (PerformanceFileError naming line and
//                    field).
//   jointPositions   every joint's position at one frame (the file's units and axes).
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct BvhJoint {
  std::string name;  // an End Site is named "<parent>/end"
  int parent = -1;
  Eigen::Vector3d offset = Eigen::Vector3d::Zero();
  // Channel kinds in file order: 0..2 = X/Y/Z position, 3..5 = X/Y/Z rotation (degrees).
  std::vector<int> channels;
  int first_channel = 0;  // column of its first channel in a motion row
};

struct BvhClip {
  std::string source;
  std::vector<BvhJoint> joints;  // parents before children
  double frame_time_s = 0.0;
  Eigen::MatrixXd motion;        // frames x channels
  int frames() const { return static_cast<int>(motion.rows()); }
  int jointIndex(const std::string& name) const;  // -1 if absent
};

BvhClip parseBvh(const std::string& text, const std::string& source);

// Global positions (joints x 3) at `frame`: each joint's transform is its parent's times a
// translation by (offset + its position channels) times its rotation channels in file order
// (Zrotation Yrotation Xrotation: R = Rz Ry Rx).
Eigen::MatrixXd jointPositions(const BvhClip& clip, int frame);

}  // namespace marionette

#pragma GCC visibility pop
