// SPDX-License-Identifier: BSD-3-Clause
// Internal (not installed): reading description files (models, scenes, rig files) with yaml-cpp,
// keeping the file, line and field path for error messages.  Shared by the loaders; nothing in
// a public header includes it, so yaml-cpp stays out of the libraries' users' include paths.
#pragma once

#include <yaml-cpp/yaml.h>

#include <Eigen/Geometry>
#include <cmath>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "marionette/common/files.hpp"
#include "marionette/common/text.hpp"
#include "marionette/common/yaml_document.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// Walks a YAML document; every failure throws Error(file, line, field, message), Error being a
// SourceError.
template <class Error>
class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& field,
                         const std::string& message) const {
    throw Error(file_, lineOf(node), field, message);
  }
  static int lineOf(const YAML::Node& node) {
    if (!node.IsDefined()) return 0;
    const YAML::Mark m = node.Mark();
    return m.line >= 0 ? m.line + 1 : 0;
  }

  void onlyKeys(const YAML::Node& map, const std::string& field,
                const std::set<std::string>& allowed) const {
    if (!map.IsMap()) fail(map, field, "expected a mapping");
    for (const auto& kv : map) {
      // A key that is no name (a mapping, an anchor's alias: found by fuzzing keyframes).
      if (!kv.first.IsScalar()) fail(kv.first, field, "a key must be a name");
      const std::string key = kv.first.Scalar();
      if (!allowed.count(key)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(kv.first, field.empty() ? key : field + "." + key,
             "unknown key '" + key + "' (expected one of: " + list + ")");
      }
    }
  }

  double number(const YAML::Node& n, const std::string& field) const {
    if (!n.IsScalar()) fail(n, field, "expected a number");
    double x;
    if (!parseFiniteNumber(n.Scalar(), x))  // (the flags' grammar: text.hpp)
      fail(n, field, "expected a finite number (got '" + n.Scalar() + "')");
    return x;
  }
  bool flag(const YAML::Node& n, const std::string& field) const {
    bool b = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, b))
      fail(n, field, "expected true or false (got '" + (n.IsScalar() ? n.Scalar() : "") + "')");
    return b;
  }
  double number(const YAML::Node& map, const std::string& key, const std::string& field,
                double fallback) const {
    const YAML::Node n = map[key];
    return n ? number(n, field + "." + key) : fallback;
  }
  double required(const YAML::Node& map, const std::string& key, const std::string& field) const {
    const YAML::Node n = map[key];
    if (!n) fail(map, field + "." + key, "missing");
    return number(n, field + "." + key);
  }
  std::string text(const YAML::Node& n, const std::string& field) const {
    if (!n.IsScalar()) fail(n, field, "expected a string");
    return n.Scalar();
  }
  std::string requiredText(const YAML::Node& map, const std::string& key,
                           const std::string& field) const {
    const YAML::Node n = map[key];
    if (!n) fail(map, field + "." + key, "missing");
    return text(n, field + "." + key);
  }
  Eigen::Vector3d vec3(const YAML::Node& n, const std::string& field) const {
    if (!n.IsSequence() || n.size() != 3) fail(n, field, "expected a list of 3 numbers");
    Eigen::Vector3d v;
    for (int i = 0; i < 3; ++i) v[i] = number(n[i], field + "[" + std::to_string(i) + "]");
    return v;
  }
  Eigen::Vector3d vec3(const YAML::Node& map, const std::string& key, const std::string& field,
                       const Eigen::Vector3d& fallback) const {
    const YAML::Node n = map[key];
    return n ? vec3(n, field + "." + key) : fallback;
  }
  std::pair<double, double> range(const YAML::Node& n, const std::string& field) const {
    if (!n.IsSequence() || n.size() != 2) fail(n, field, "expected [lower, upper]");
    return {number(n[0], field + "[0]"), number(n[1], field + "[1]")};
  }

  // pose: {<translation_key>: [x, y, z], rpy: [roll, pitch, yaw] | quaternion: [w, x, y, z]}.
  // rpy as URDF: R = Rz(yaw) Ry(pitch) Rx(roll).  A quaternion must have unit norm (to 1e-6;
  // it is then normalised exactly).
  Eigen::Isometry3d pose(const YAML::Node& n, const std::string& field,
                         const std::string& translation_key = "xyz") const {
    onlyKeys(n, field, {translation_key, "rpy", "quaternion"});
    Eigen::Isometry3d T = Eigen::Isometry3d::Identity();
    T.translation() = vec3(n, translation_key, field, Eigen::Vector3d::Zero());
    if (n["rpy"] && n["quaternion"]) fail(n, field, "give rpy or quaternion, not both");
    if (n["rpy"]) {
      const Eigen::Vector3d rpy = vec3(n["rpy"], field + ".rpy");
      T.linear() = (Eigen::AngleAxisd(rpy[2], Eigen::Vector3d::UnitZ()) *
                    Eigen::AngleAxisd(rpy[1], Eigen::Vector3d::UnitY()) *
                    Eigen::AngleAxisd(rpy[0], Eigen::Vector3d::UnitX()))
                       .toRotationMatrix();
    }
    if (const YAML::Node qn = n["quaternion"]) {
      const std::string qf = field + ".quaternion";
      if (!qn.IsSequence() || qn.size() != 4) fail(qn, qf, "expected [w, x, y, z]");
      Eigen::Quaterniond q(number(qn[0], qf + "[0]"), number(qn[1], qf + "[1]"),
                           number(qn[2], qf + "[2]"), number(qn[3], qf + "[3]"));
      if (std::abs(q.norm() - 1.0) > 1e-6)
        fail(qn, qf, "must be a unit quaternion (norm " + std::to_string(q.norm()) + ")");
      T.linear() = q.normalized().toRotationMatrix();
    }
    return T;
  }

  // A list node (absent = empty).
  YAML::Node list(const YAML::Node& root, const std::string& key) const {
    const YAML::Node n = root[key];
    if (n && !n.IsSequence() && !n.IsNull()) fail(n, key, "expected a list");
    return n;
  }
  static bool isNumber(const YAML::Node& n) {
    double x;
    return n.IsScalar() && YAML::convert<double>::decode(n, x);
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

// Parses one YAML document (loadYamlDocument) and hands the root to `parse`; the document's
// problems and yaml-cpp exceptions escaping `parse` become Error(source_name, line, field,
// message).
template <class Error, class Result>
Result parseYamlDocument(const std::string& text, const std::string& source_name,
                         const std::function<Result(const YAML::Node&)>& parse) {
  YAML::Node root;
  try {
    root = loadYamlDocument(text);
  } catch (const YamlDocumentError& e) {
    throw Error(source_name, e.line(), e.field(), e.what());
  }
  try {
    return parse(root);
  } catch (const YAML::Exception& e) {
    throw Error(source_name, e.mark.line >= 0 ? e.mark.line + 1 : 0, "", e.msg);
  }
}

// The whole text of a description file; Error(path, 0, "", problem) if it cannot be read, is a
// directory or holds more than kMaxDescriptionBytes.
template <class Error>
std::string readDescriptionFile(const std::string& path, const std::string& kind) {
  try {
    return readTextFile(path, kMaxDescriptionBytes);
  } catch (const FileError& e) {
    throw Error(path, 0, "", kind + " file: " + e.what());
  }
}

// What loadModel / loadScene throw for a name that is neither a built-in nor a readable file.
template <class Error>
[[noreturn]] void throwNoSuch(const std::string& kind, const std::string& name_or_path,
                              const std::vector<std::string>& builtin_names) {
  std::string names;
  for (const auto& n : builtin_names) names += (names.empty() ? "" : ", ") + n;
  throw Error(name_or_path, 0, "",
              "no such " + kind + ": not a built-in (" + names + ") and not a readable file");
}

// "item[3]": the field name of a list entry.
inline std::string indexedField(const std::string& key, size_t i) {
  return key + "[" + std::to_string(i) + "]";
}

}  // namespace marionette

#pragma GCC visibility pop
