// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/model_io.hpp"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "embedded_kModelFiles.hpp"  // generated: the built-in files
#include "marionette/models/description_yaml.hpp"

namespace marionette {

namespace {

using Reader = YamlReader<ModelError>;

Eigen::Matrix3d readInertia(const Reader& r, const YAML::Node& n, const std::string& field) {
  Eigen::Matrix3d I = Eigen::Matrix3d::Zero();
  if (n.IsMap()) {
    r.onlyKeys(n, field, {"ixx", "iyy", "izz", "ixy", "ixz", "iyz"});
    I(0, 0) = r.required(n, "ixx", field);
    I(1, 1) = r.required(n, "iyy", field);
    I(2, 2) = r.required(n, "izz", field);
    I(0, 1) = I(1, 0) = r.number(n, "ixy", field, 0.0);
    I(0, 2) = I(2, 0) = r.number(n, "ixz", field, 0.0);
    I(1, 2) = I(2, 1) = r.number(n, "iyz", field, 0.0);
  } else if (n.IsSequence() && n.size() == 3 && n[0].IsScalar()) {
    const Eigen::Vector3d d = r.vec3(n, field);
    I = d.asDiagonal();
  } else if (n.IsSequence() && n.size() == 3) {
    for (int i = 0; i < 3; ++i) I.row(i) = r.vec3(n[i], indexedField(field, i)).transpose();
  } else {
    r.fail(n, field,
           "expected {ixx, iyy, izz, ixy, ixz, iyz}, a diagonal [ixx, iyy, izz] or a 3x3 list");
  }
  return I;
}

// puppet: / rig: end of a string: a named point, or {frame, at}.
void readStringEnd(
    const Reader& r, const YAML::Node& n, const std::string& field,
    const std::vector<std::pair<std::string, std::pair<std::string, Eigen::Vector3d>>>& points,
    std::string& frame, Eigen::Vector3d& at) {
  if (n.IsScalar()) {
    const std::string name = n.Scalar();
    for (const auto& p : points)
      if (p.first == name) {
        frame = p.second.first;
        at = p.second.second;
        return;
      }
    r.fail(n, field, "unknown point '" + name + "' (declare it under points:)");
  }
  r.onlyKeys(n, field, {"frame", "at"});
  frame = r.requiredText(n, "frame", field);
  at = r.vec3(n, "at", field, Eigen::Vector3d::Zero());
}

// A path written in a file is relative to that file's folder (absolute paths stay as they are;
// "builtin:" sources have no folder).
std::string resolveRelative(const std::string& file, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const size_t slash = file.find_last_of('/');
  if (slash == std::string::npos || file.rfind("builtin:", 0) == 0) return path;
  return file.substr(0, slash + 1) + path;
}

ModelPtr parse(const YAML::Node& root, const std::string& file) {
  Reader r(file);
  if (!root.IsMap()) r.fail(root, "", "a model file is a YAML mapping (name:, frames:, ...)");
  r.onlyKeys(
      root, "",
      {"name", "description", "gravity", "defaults", "dynamic", "kinematic", "frames", "masses",
       "points", "strings", "geometry", "allowed_collisions", "contacts", "stage"});
  ModelBuilder b(root["name"] ? r.text(root["name"], "name") : std::string("unnamed"));
  b.setSourceFile(file);
  if (root["description"]) b.setDescription(r.text(root["description"], "description"));
  if (root["gravity"]) b.setGravity(r.number(root["gravity"], "gravity"));
  if (root["stage"]) b.setStagePose(r.pose(root["stage"], "stage"));

  JointLimit limit_defaults;
  double damping_default = 0.0;
  if (const YAML::Node d = root["defaults"]) {
    r.onlyKeys(d, "defaults", {"damping", "limit_stiffness", "limit_damping"});
    damping_default = r.number(d, "damping", "defaults", 0.0);
    limit_defaults.stiffness = r.number(d, "limit_stiffness", "defaults", 0.0);
    limit_defaults.damping = r.number(d, "limit_damping", "defaults", 0.0);
  }

  const YAML::Node dyn = r.list(root, "dynamic");
  for (size_t i = 0; dyn && i < dyn.size(); ++i) {
    const YAML::Node n = dyn[i];
    const std::string f = indexedField("dynamic", i);
    r.onlyKeys(n, f, {"name", "initial", "damping", "spring", "limits"});
    DynamicVariable v;
    v.name = r.requiredText(n, "name", f);
    v.initial = r.number(n, "initial", f, 0.0);
    v.damping = r.number(n, "damping", f, damping_default);
    v.source = sourceRef(n, f);
    if (const YAML::Node S = n["spring"]) {
      const std::string sf = f + ".spring";
      r.onlyKeys(S, sf, {"stiffness", "neutral"});
      v.spring.stiffness = r.number(S, "stiffness", sf, 0.0);
      v.spring.neutral = r.number(S, "neutral", sf, 0.0);
    }
    if (const YAML::Node L = n["limits"]) {
      v.limit = limit_defaults;
      const std::string lf = f + ".limits";
      if (L.IsSequence()) {
        std::tie(v.limit.lower, v.limit.upper) = r.range(L, lf);
      } else {
        r.onlyKeys(L, lf, {"lower", "upper", "stiffness", "damping"});
        v.limit.lower = r.number(L, "lower", lf, v.limit.lower);
        v.limit.upper = r.number(L, "upper", lf, v.limit.upper);
        v.limit.stiffness = r.number(L, "stiffness", lf, limit_defaults.stiffness);
        v.limit.damping = r.number(L, "damping", lf, limit_defaults.damping);
      }
    }
    b.addDynamic(v);
  }
  const YAML::Node kin = r.list(root, "kinematic");
  for (size_t i = 0; kin && i < kin.size(); ++i) {
    const YAML::Node n = kin[i];
    const std::string f = indexedField("kinematic", i);
    r.onlyKeys(n, f, {"name", "default", "range", "max_speed", "max_accel"});
    KinematicVariable v;
    v.name = r.requiredText(n, "name", f);
    v.default_value = r.number(n, "default", f, 0.0);
    if (n["range"]) std::tie(v.lower, v.upper) = r.range(n["range"], f + ".range");
    v.max_speed = r.number(n, "max_speed", f, v.max_speed);
    v.max_accel = r.number(n, "max_accel", f, v.max_accel);
    v.source = sourceRef(n, f);
    b.addKinematic(v);
  }

  const YAML::Node frames = r.list(root, "frames");
  static const std::set<std::string> kFrameKeys = {
      "name", "parent", "tx", "ty", "tz", "rx", "ry", "rz", "rotate", "translate", "pose"};
  for (size_t i = 0; frames && i < frames.size(); ++i) {
    const YAML::Node n = frames[i];
    const std::string f = indexedField("frames", i);
    r.onlyKeys(n, f, kFrameKeys);
    const std::string name = r.requiredText(n, "name", f);
    const std::string parent = n["parent"] ? r.text(n["parent"], f + ".parent") : "world";
    const SourceRef src = sourceRef(n, f + " '" + name + "'");
    int transforms = 0;
    for (const char* k : {"tx", "ty", "tz", "rx", "ry", "rz", "rotate", "translate", "pose"})
      transforms += n[k] ? 1 : 0;
    if (transforms > 1)
      r.fail(n, f,
             "a frame has one transform (one of tx, ty, tz, rx, ry, rz, rotate, translate, "
             "pose); chain frames for more");
    // A primitive: axis + parameter (number = constant, otherwise a variable name).
    auto primitive = [&](JointType type, const Eigen::Vector3d& axis, const YAML::Node& param,
                         const std::string& pf) {
      if (Reader::isNumber(param)) {
        const double x = r.number(param, pf);
        Eigen::Isometry3d T = Eigen::Isometry3d::Identity();
        if (type == JointType::Rotate)
          T.linear() = Eigen::AngleAxisd(x, axis.normalized()).toRotationMatrix();
        else
          T.translation() = axis.normalized() * x;
        b.addFixedFrame(name, parent, T, src);
      } else {
        b.addJointFrame(name, parent, type, axis, r.text(param, pf), src);
      }
    };
    const std::pair<const char*, Eigen::Vector3d> prims[] = {
        {"tx", Eigen::Vector3d::UnitX()}, {"ty", Eigen::Vector3d::UnitY()},
        {"tz", Eigen::Vector3d::UnitZ()}, {"rx", Eigen::Vector3d::UnitX()},
        {"ry", Eigen::Vector3d::UnitY()}, {"rz", Eigen::Vector3d::UnitZ()}};
    bool done = false;
    for (const auto& [key, axis] : prims) {
      if (!n[key]) continue;
      const JointType type = key[0] == 'r' ? JointType::Rotate : JointType::Translate;
      primitive(type, axis, n[key], f + "." + key);
      done = true;
    }
    for (const char* key : {"rotate", "translate"}) {
      if (!n[key]) continue;
      const YAML::Node g = n[key];
      const std::string gf = f + "." + key;
      r.onlyKeys(g, gf, {"axis", "by"});
      if (!g["axis"]) r.fail(g, gf + ".axis", "missing");
      if (!g["by"]) r.fail(g, gf + ".by", "missing");
      const Eigen::Vector3d axis = r.vec3(g["axis"], gf + ".axis");
      if (!(axis.norm() > 1e-12)) r.fail(g["axis"], gf + ".axis", "must be a non-zero vector");
      primitive(key[0] == 'r' ? JointType::Rotate : JointType::Translate, axis, g["by"],
                gf + ".by");
      done = true;
    }
    if (!done) {
      const Eigen::Isometry3d T =
          n["pose"] ? r.pose(n["pose"], f + ".pose") : Eigen::Isometry3d::Identity();
      b.addFixedFrame(name, parent, T, src);
    }
  }

  const YAML::Node masses = r.list(root, "masses");
  for (size_t i = 0; masses && i < masses.size(); ++i) {
    const YAML::Node n = masses[i];
    const std::string f = indexedField("masses", i);
    r.onlyKeys(n, f, {"name", "frame", "mass", "com", "inertia"});
    const std::string name = n["name"] ? r.text(n["name"], f + ".name") : "";
    const std::string frame = r.requiredText(n, "frame", f);
    const double mass = r.required(n, "mass", f);
    const Eigen::Vector3d com = r.vec3(n, "com", f, Eigen::Vector3d::Zero());
    if (!n["inertia"]) r.fail(n, f + ".inertia", "missing");
    const Eigen::Matrix3d I = readInertia(r, n["inertia"], f + ".inertia");
    b.addMass(name, frame, mass, com, I, sourceRef(n, f));
  }

  std::vector<std::pair<std::string, std::pair<std::string, Eigen::Vector3d>>> point_table;
  const YAML::Node points = r.list(root, "points");
  for (size_t i = 0; points && i < points.size(); ++i) {
    const YAML::Node n = points[i];
    const std::string f = indexedField("points", i);
    r.onlyKeys(n, f, {"name", "frame", "at"});
    const std::string name = r.requiredText(n, "name", f);
    const std::string frame = r.requiredText(n, "frame", f);
    const Eigen::Vector3d at = r.vec3(n, "at", f, Eigen::Vector3d::Zero());
    b.addPoint(name, frame, at, sourceRef(n, f));
    point_table.push_back({name, {frame, at}});
  }

  const YAML::Node strings = r.list(root, "strings");
  for (size_t i = 0; strings && i < strings.size(); ++i) {
    const YAML::Node n = strings[i];
    const std::string f = indexedField("strings", i);
    r.onlyKeys(n, f, {"name", "puppet", "rig", "length"});
    const std::string name = r.requiredText(n, "name", f);
    if (!n["puppet"]) r.fail(n, f + ".puppet", "missing");
    if (!n["rig"]) r.fail(n, f + ".rig", "missing");
    if (!n["length"]) r.fail(n, f + ".length", "missing");
    std::string pf, rf;
    Eigen::Vector3d pa, ra;
    readStringEnd(r, n["puppet"], f + ".puppet", point_table, pf, pa);
    readStringEnd(r, n["rig"], f + ".rig", point_table, rf, ra);
    std::string lvar;
    double len = 0.0;
    if (Reader::isNumber(n["length"]))
      len = r.number(n["length"], f + ".length");
    else
      lvar = r.text(n["length"], f + ".length");
    b.addString(name, pf, pa, rf, ra, lvar, len, sourceRef(n, f));
  }

  const YAML::Node geometry = r.list(root, "geometry");
  for (size_t i = 0; geometry && i < geometry.size(); ++i) {
    const YAML::Node n = geometry[i];
    const std::string f = indexedField("geometry", i);
    r.onlyKeys(n, f, {"name", "frame", "pose", "sphere", "box", "capsule", "cylinder", "mesh"});
    Geometry g;
    g.source = sourceRef(n, f);
    const std::string frame = r.requiredText(n, "frame", f);
    g.name = n["name"] ? r.text(n["name"], f + ".name") : frame + "_" + std::to_string(i);
    if (n["pose"]) g.pose = r.pose(n["pose"], f + ".pose");
    g.shape = readShape(r, n, f,
                        {ShapeType::Sphere, ShapeType::Box, ShapeType::Capsule, ShapeType::Cylinder,
                         ShapeType::Mesh});
    if (g.shape.type == ShapeType::Mesh)
      g.shape.mesh_path = resolveRelative(file, g.shape.mesh_path);
    b.addGeometry(g, frame);
  }

  const YAML::Node allowed = r.list(root, "allowed_collisions");
  for (size_t i = 0; allowed && i < allowed.size(); ++i) {
    const YAML::Node n = allowed[i];
    const std::string f = indexedField("allowed_collisions", i);
    if (!n.IsSequence() || n.size() != 2) r.fail(n, f, "expected [frame_a, frame_b]");
    b.allowCollision(r.text(n[0], f + "[0]"), r.text(n[1], f + "[1]"), sourceRef(n, f));
  }
  if (const YAML::Node c = root["contacts"]) {
    r.onlyKeys(c, "contacts", {"self", "friction", "exclude", "pairs"});
    b.setSelfContact(c["self"] ? r.flag(c["self"], "contacts.self") : true,
                     r.number(c, "friction", "contacts", kDefaultSelfFriction),
                     sourceRef(c["friction"] ? c["friction"] : c, "contacts.friction"));
    auto frame_pair = [&](const YAML::Node& n, const std::string& f) {
      if (!n.IsSequence() || n.size() != 2) r.fail(n, f, "expected [frame_a, frame_b]");
      return std::make_pair(r.text(n[0], f + "[0]"), r.text(n[1], f + "[1]"));
    };
    auto list = [&](const char* key) {
      const YAML::Node n = c[key];
      if (n && !n.IsSequence() && !n.IsNull())
        r.fail(n, std::string("contacts.") + key, "expected a list");
      return n;
    };
    const YAML::Node exclude = list("exclude");
    for (size_t i = 0; exclude && i < exclude.size(); ++i) {
      const std::string f = indexedField("contacts.exclude", i);
      const auto [a, b_] = frame_pair(exclude[i], f);
      b.excludeContact(a, b_, sourceRef(exclude[i], f));
    }
    const YAML::Node pairs = list("pairs");
    for (size_t i = 0; pairs && i < pairs.size(); ++i) {
      const YAML::Node n = pairs[i];
      const std::string f = indexedField("contacts.pairs", i);
      r.onlyKeys(n, f, {"links", "friction"});
      if (!n["links"]) r.fail(n, f, "expected links: [frame_a, frame_b]");
      const auto [a, b_] = frame_pair(n["links"], f + ".links");
      b.setContactFriction(a, b_, r.required(n, "friction", f),
                           sourceRef(n["friction"], f + ".friction"));
    }
  }
  return b.build();
}

}  // namespace

ModelPtr loadModelString(const std::string& text, const std::string& source_name) {
  return parseYamlDocument<ModelError, ModelPtr>(
      text, source_name, [&](const YAML::Node& root) { return parse(root, source_name); });
}

ModelPtr loadModelFile(const std::string& path) {
  return loadModelString(readDescriptionFile<ModelError>(path, "model"), path);
}

ModelPtr loadModel(const std::string& name_or_path) {
  const std::string text = builtinModelText(name_or_path);
  if (!text.empty()) return loadModelString(text, "builtin:" + name_or_path);
  if (std::ifstream(name_or_path)) return loadModelFile(name_or_path);
  throwNoSuch<ModelError>("model", name_or_path, builtinModelNames());
}

std::vector<std::string> builtinModelNames() {
  return embedded::kModelFiles.topLevelNames("yaml");
}

std::string builtinModelText(const std::string& name) {
  const embedded::File* f = embedded::kModelFiles.find(name + ".yaml");
  return f ? f->text() : std::string();
}

}  // namespace marionette
