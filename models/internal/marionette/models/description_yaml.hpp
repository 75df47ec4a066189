// SPDX-License-Identifier: BSD-3-Clause
// Internal to the description loaders (models and scenes; not installed): the YAML forms of the
// domain types they share -- shapes and source references -- on top of common's YamlReader.
#pragma once

#include <set>
#include <string>

#include "marionette/common/yaml_reader.hpp"
#include "marionette/models/shape.hpp"
#include "marionette/models/source_error.hpp"

namespace marionette {

// Where a node came from, for a description item's error messages.
inline SourceRef sourceRef(const YAML::Node& node, const std::string& field) {
  return SourceRef{field, YamlReader<SourceError>::lineOf(node)};
}

// The one shape key of an item ("sphere: {radius}", "box: {size}", "capsule"/"cylinder":
// {radius, length}, "plane: {normal, offset}", "mesh: {file, scale}"), among `allowed`.  A
// mesh scale is a number or [sx, sy, sz].  Dimensions are checked (shapeProblem).
template <class Error>
Shape readShape(const YamlReader<Error>& r, const YAML::Node& item, const std::string& field,
                const std::set<ShapeType>& allowed) {
  Shape s;
  int found = 0;
  std::string names;
  for (ShapeType t : allowed) {
    const std::string key = shapeTypeName(t);
    names += (names.empty() ? "" : ", ") + key;
    const YAML::Node n = item[key];
    if (!n) continue;
    ++found;
    const std::string f = field + "." + key;
    s.type = t;
    switch (t) {
      case ShapeType::Sphere:
        r.onlyKeys(n, f, {"radius"});
        s.radius_m = r.required(n, "radius", f);
        break;
      case ShapeType::Box:
        r.onlyKeys(n, f, {"size"});
        if (!n["size"]) r.fail(n, f + ".size", "missing (full side lengths [x, y, z], m)");
        s.size_m = r.vec3(n["size"], f + ".size");
        break;
      case ShapeType::Capsule:
      case ShapeType::Cylinder:
        r.onlyKeys(n, f, {"radius", "length"});
        s.radius_m = r.required(n, "radius", f);
        s.length_m = r.required(n, "length", f);
        break;
      case ShapeType::Plane:
        r.onlyKeys(n, f, {"normal", "offset"});
        if (!n["normal"]) r.fail(n, f + ".normal", "missing");
        s.normal = r.vec3(n["normal"], f + ".normal");
        s.offset_m = r.number(n, "offset", f, 0.0);
        if (s.normal.norm() < 1e-9) r.fail(n["normal"], f + ".normal", "must not be zero");
        // normal . x <= offset with a unit normal: scale the offset with it.
        s.offset_m /= s.normal.norm();
        s.normal.normalize();
        break;
      case ShapeType::Mesh:
        r.onlyKeys(n, f, {"file", "scale"});
        s.mesh_path = r.requiredText(n, "file", f);
        if (const YAML::Node sc = n["scale"]) {
          if (sc.IsScalar())
            s.mesh_scale.setConstant(r.number(sc, f + ".scale"));
          else
            s.mesh_scale = r.vec3(sc, f + ".scale");
        }
        break;
    }
    const std::string problem = shapeProblem(s);
    if (!problem.empty()) r.fail(n, f, problem);
  }
  if (found != 1) r.fail(item, field, "give exactly one shape: " + names);
  return s;
}

}  // namespace marionette
