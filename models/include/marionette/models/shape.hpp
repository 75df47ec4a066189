// SPDX-License-Identifier: BSD-3-Clause
// Collision shapes, as written in model files (link geometry) and scene files (obstacles).
// Conventions (FCL's): capsules and cylinders lie along their local z axis, centred on the origin;
// boxes take full side lengths; a plane is the half-space {x : normal . x <= offset} (solid below,
// free on the side the normal points to).
#pragma once

#include <Eigen/Core>
#include <string>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

enum class ShapeType { Sphere, Box, Capsule, Cylinder, Plane, Mesh };

// "sphere", "box", ... (the YAML key).
const char* shapeTypeName(ShapeType type);

struct Shape {
  ShapeType type = ShapeType::Sphere;
  double radius_m = 0.0;                                 // sphere, capsule, cylinder
  double length_m = 0.0;                                 // capsule, cylinder (axis length)
  Eigen::Vector3d size_m = Eigen::Vector3d::Zero();      // box: full side lengths
  Eigen::Vector3d normal = Eigen::Vector3d::UnitZ();     // plane: unit outward normal
  double offset_m = 0.0;                                 // plane: normal . x <= offset is solid
  std::string mesh_path;                                 // mesh: file (resolved path)
  Eigen::Vector3d mesh_scale = Eigen::Vector3d::Ones();  // mesh: per-axis scale
};

// The stage's range.  Every coordinate of a model or a scene (positions, offsets, attachment
// points, centres of mass) lies within +-kStageRange_m of its origin on each axis, and every
// dimension (radius, length, box side, string length, a mesh's extent) is in
// [kMinDimension_m, kStageRange_m].  Far beyond, collision geometry loses its precision: FCL's
// GJK asserts on a box at 1e200 m.  The checker treats a link posed beyond 10x the range (a
// puppet that has flown away) as out of the stage, without asking FCL.
constexpr double kStageRange_m = 1000.0;
constexpr double kMinDimension_m = 1e-6;

// "" when the shape's dimensions make sense, else what is wrong ("radius must be > 0 (got 0)").
std::string shapeProblem(const Shape& shape);
// "" when every coordinate of p is within +-kStageRange_m, else what is wrong.
std::string coordinateProblem(const Eigen::Vector3d& p_m);
// "" when x is a dimension in [kMinDimension_m, kStageRange_m], else "<what> must be ...".
std::string dimensionProblem(const char* what, double x_m);

}  // namespace marionette

#pragma GCC visibility pop
