#include "marionette/models/shape.hpp"

#include <cmath>

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
std::string notPositive(const char* what, double x) {
  if (std::isfinite(x) && x > 0.0) return {};
  return std::string(what) + " must be > 0 m (got " + std::to_string(x) + ")";
}
}  // namespace

std::string shapeProblem(const Shape& s) {
  std::string p;
  switch (s.type) {
    case ShapeType::Sphere: return notPositive("radius", s.radius_m);
    case ShapeType::Capsule:
    case ShapeType::Cylinder:
      p = notPositive("radius", s.radius_m);
      return p.empty() ? notPositive("length", s.length_m) : p;
    case ShapeType::Box:
      for (int k = 0; k < 3 && p.empty(); ++k) p = notPositive("size", s.size_m[k]);
      return p;
    case ShapeType::Plane:
      if (!s.normal.allFinite() || std::abs(s.normal.norm() - 1.0) > 1e-9)
        return "normal must be a unit vector";
      return std::isfinite(s.offset_m) ? std::string() : "offset must be finite";
    case ShapeType::Mesh:
      if (s.mesh_path.empty()) return "mesh needs a file";
      for (int k = 0; k < 3; ++k)
        if (!(std::isfinite(s.mesh_scale[k]) && s.mesh_scale[k] > 0.0))
          return "mesh scale must be > 0 (got " + std::to_string(s.mesh_scale[k]) + ")";
      return {};
  }
  return "unknown shape";
}

}  // namespace marionette
