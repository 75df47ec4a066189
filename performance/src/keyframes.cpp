// SPDX-License-Identifier: BSD-3-Clause
// Keyframes (docs/performance.md):
//   keyframes:
//     - t: 0.5
//       points: {hand_r: [x, y, z]}               # stage coordinates (m)
//       points: {hand_r: {offset: [dx, dy, dz]}}  # or from where the point hangs at rest
//       joints: {gamma_arm_r_2: -0.6, act_head_yaw: 0.3}   # joints or rig inputs (rad or m)
#include <algorithm>
#include <limits>
#include <optional>

#include "marionette/common/text.hpp"

#include "marionette/performance/sources.hpp"
#include "rest_points.hpp"
#include "track_checks.hpp"
#include "yaml_source.hpp"

namespace marionette {

TargetMotion readKeyframes(const ModelPtr& model, const std::string& text,
                           const std::string& source) {
  const YAML::Node root = detail::performanceYaml(text, source, 4 << 20);
  detail::PerformanceReader r(source);
  if (!root.IsMap()) r.fail(root, "", "a keyframes file is a YAML mapping (keyframes: [...])");
  r.onlyKeys(root, "", {"keyframes", "description"});
  const YAML::Node keys = root["keyframes"];
  if (!keys || !keys.IsSequence() || keys.size() == 0)
    r.fail(root, "keyframes", "expected a list of keyframes");
  TargetMotion out;
  out.source = source;
  out.smooth = true;
  const int n = static_cast<int>(keys.size());
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  // First pass: the names; second: the values.
  for (const YAML::Node& key : keys) {
    if (!key.IsMap()) continue;
    if (const YAML::Node p = key["points"]; p && p.IsMap())
      for (const auto& kv : p)
        if (out.pointIndex(kv.first.Scalar()) < 0) out.points.push_back(kv.first.Scalar());
    if (const YAML::Node j = key["joints"]; j && j.IsMap())
      for (const auto& kv : j) {
        const std::string name = kv.first.Scalar();
        if (std::find(out.variables.begin(), out.variables.end(), name) == out.variables.end())
          out.variables.push_back(name);
      }
  }
  out.positions_m.setConstant(n, 3 * static_cast<int>(out.points.size()), kNaN);
  out.values.setConstant(n, static_cast<int>(out.variables.size()), kNaN);
  std::optional<detail::RestPoints> rest;
  std::vector<int> lines;
  for (int f = 0; f < n; ++f) {
    const YAML::Node key = keys[f];
    const std::string field = "keyframes[" + std::to_string(f) + "]";
    lines.push_back(r.lineOf(key));
    r.onlyKeys(key, field, {"t", "points", "joints"});
    out.times_s.push_back(r.required(key, "t", field));
    if (const YAML::Node p = key["points"]) {
      if (!p.IsMap()) r.fail(p, field + ".points", "expected a mapping of point: [x, y, z]");
      for (const auto& kv : p) {
        const std::string name = kv.first.Scalar();
        const std::string at = field + ".points." + name;
        const int index = model->pointIndex(name);
        if (index < 0)
          r.fail(kv.first, at,
                 "model " + model->name + " has no point '" + name + "'" +
                     detail::knownPoints(*model));
        Eigen::Vector3d position;
        if (kv.second.IsMap()) {
          r.onlyKeys(kv.second, at, {"offset"});
          if (!rest) rest = detail::restPoints(model);
          position = rest->points_m.col(index) + r.vec3(kv.second["offset"], at + ".offset");
        } else {
          position = r.vec3(kv.second, at);
        }
        out.positions_m.block<1, 3>(f, 3 * out.pointIndex(name)) = position.transpose();
      }
    }
    if (const YAML::Node j = key["joints"]) {
      if (!j.IsMap()) r.fail(j, field + ".joints", "expected a mapping of variable: value");
      for (const auto& kv : j) {
        const std::string name = kv.first.Scalar();
        const std::string at = field + ".joints." + name;
        if (model->variableIndex(name) < 0)
          r.fail(kv.first, at, "model " + model->name + " has no joint or input '" + name + "'");
        const double value = r.number(kv.second, at);
        const int k = model->variableIndex(name) - model->nd();
        if (k >= 0 && !(value >= model->kinematic[k].lower && value <= model->kinematic[k].upper))
          r.fail(kv.second, at,
                 "outside the input's range [" + formatNumber(model->kinematic[k].lower) + ", " +
                     formatNumber(model->kinematic[k].upper) + "]");
        const auto it = std::find(out.variables.begin(), out.variables.end(), name);
        out.values(f, static_cast<int>(it - out.variables.begin())) = value;
      }
    }
  }
  detail::checkTracks(out, [&](int frame) { return lines[frame]; });
  return out;
}

}  // namespace marionette
