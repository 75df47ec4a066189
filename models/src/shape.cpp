// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/shape.hpp"

#include <cmath>
#include <sstream>

namespace marionette {

const char* shapeTypeName(ShapeType type) {
  switch (type) {
    case ShapeType::Sphere: return "sphere";
    case ShapeType::Box: return "box";
    case ShapeType::Capsule: return "capsule";
    case ShapeType::Cylinder: return "cylinder";
    case ShapeType::Plane: return "plane";
    case ShapeType::Mesh: return "mesh";
  }
  return "?";
}

namespace {
std::string number(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}
}  // namespace

std::string dimensionProblem(const char* what, double x) {
  if (x >= kMinDimension_m && x <= kStageRange_m) return {};
  return std::string(what) + " must be between " + number(kMinDimension_m) + " and " +
         number(kStageRange_m) + " m (got " + number(x) + ")";
}

std::string coordinateProblem(const Eigen::Vector3d& p) {
  for (int k = 0; k < 3; ++k)
    if (!(std::abs(p[k]) <= kStageRange_m))
      return "coordinate " + std::string(1, "xyz"[k]) + " = " + number(p[k]) +
             " m is beyond the stage's range (+-" + number(kStageRange_m) + " m)";
  return {};
}

std::string shapeProblem(const Shape& s) {
  std::string p;
  switch (s.type) {
    case ShapeType::Sphere: return dimensionProblem("radius", s.radius_m);
    case ShapeType::Capsule:
    case ShapeType::Cylinder:
      p = dimensionProblem("radius", s.radius_m);
      return p.empty() ? dimensionProblem("length", s.length_m) : p;
    case ShapeType::Box:
      for (int k = 0; k < 3 && p.empty(); ++k) p = dimensionProblem("size", s.size_m[k]);
      return p;
    case ShapeType::Plane:
      if (!s.normal.allFinite() || std::abs(s.normal.norm() - 1.0) > 1e-9)
        return "normal must be a unit vector";
      if (!(std::abs(s.offset_m) <= kStageRange_m))
        return "offset " + number(s.offset_m) + " m is beyond the stage's range (+-" +
               number(kStageRange_m) + " m)";
      return {};
    case ShapeType::Mesh:
      if (s.mesh_path.empty()) return "mesh needs a file";
      for (int k = 0; k < 3; ++k)
        if (!(s.mesh_scale[k] >= kMinDimension_m && s.mesh_scale[k] <= kStageRange_m))
          return "mesh scale must be between " + number(kMinDimension_m) + " and " +
                 number(kStageRange_m) + " (got " + number(s.mesh_scale[k]) + ")";
      return {};
  }
  return "unknown shape";
}

}  // namespace marionette
