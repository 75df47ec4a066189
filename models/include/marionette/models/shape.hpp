// Collision shapes, as written in model files (link geometry) and scene files (obstacles).
// Conventions (FCL's): capsules and cylinders lie along their local z axis, centred on the origin;
// boxes take full side lengths; a plane is the half-space {x : normal . x <= offset} (solid below,
// free on the side the normal points to).
#pragma once

#include <Eigen/Core>
#include <string>

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

// "" when the shape's dimensions make sense, else what is wrong ("radius must be > 0 (got 0)").
std::string shapeProblem(const Shape& shape);

}  // namespace marionette
