// SPDX-License-Identifier: BSD-3-Clause
// Retarget maps and BVH clips retargeted by them (retarget.hpp).
#include "marionette/performance/retarget.hpp"

#include <algorithm>
#include <cmath>

#include "embedded_kRetargetMaps.hpp"  // generated: maps/*.yaml
#include "marionette/common/text.hpp"
#include "marionette/performance/sources.hpp"
#include "rest_points.hpp"
#include "track_checks.hpp"
#include "yaml_source.hpp"

namespace marionette {

namespace {
// A map's scales and its units' size: beyond these a clip is no puppet's motion (1e-300 reduced a
// walk to nothing, and the plan said exact).
constexpr double kMinScale = 1e-3, kMaxScale = 1e3;
constexpr double kMinUnits_m = 1e-4, kMaxUnits_m = 1e3;  // a tenth of a millimetre to a kilometre
// A clip whose points move this far (m) retargeted to targets that move less than this is
// refused.
constexpr double kMovingClip_m = 0.01, kStillTargets_m = 1e-3;
}  // namespace

RetargetMap parseRetargetMap(const std::string& text, const std::string& source) {
  const YAML::Node root = detail::performanceYaml(text, source, kMaxDescriptionBytes);
  detail::PerformanceReader r(source);
  if (!root.IsMap()) r.fail(root, "", "a retarget map is a YAML mapping (points: ...)");
  r.onlyKeys(root, "", {"model", "units_m", "axes", "root", "facing", "scale", "points"});
  RetargetMap map;
  map.source = source;
  if (root["model"]) map.model = r.text(root["model"], "model");
  map.units_m = r.number(root, "units_m", "", 1.0);
  if (root["units_m"] && !(map.units_m >= kMinUnits_m && map.units_m <= kMaxUnits_m))
    r.fail(root["units_m"], "units_m", formatted("must be in [%g, %g]", kMinUnits_m, kMaxUnits_m));
  if (const YAML::Node axes = root["axes"]) {
    if (!axes.IsSequence() || axes.size() != 3)
      r.fail(axes, "axes", "expected the clip's axes for stage x, y, z, e.g. [Z, X, Y]");
    int used = 0;
    for (int i = 0; i < 3; ++i) {
      const std::string field = "axes[" + std::to_string(i) + "]";
      std::string a = r.text(axes[i], field);
      map.signs[i] = 1;
      if (!a.empty() && (a[0] == '-' || a[0] == '+')) {
        map.signs[i] = a[0] == '-' ? -1 : 1;
        a = a.substr(1);
      }
      if (a != "X" && a != "Y" && a != "Z") r.fail(axes[i], field, "expected X, Y or Z (or -X ...)");
      map.axes[i] = a[0] - 'X';
      if (used & (1 << map.axes[i])) r.fail(axes[i], field, "an axis used twice");
      used |= 1 << map.axes[i];
    }
  }
  if (const YAML::Node n = root["root"]) {
    r.onlyKeys(n, "root", {"joint", "motion", "box_m"});
    if (n["joint"]) map.root = r.text(n["joint"], "root.joint");
    if (n["motion"]) {
      const std::string m = r.text(n["motion"], "root.motion");
      if (m != "remove" && m != "keep") r.fail(n["motion"], "root.motion", "expected remove or keep");
      map.keep_root = m == "keep";
    }
    map.root_box_m = r.number(n, "box_m", "root", map.root_box_m);
    if (!(map.root_box_m >= 0)) r.fail(n["box_m"], "root.box_m", "must be >= 0");
  }
  if (const YAML::Node f = root["facing"]) {
    if (!f.IsSequence() || f.size() != 2)
      r.fail(f, "facing", "expected [left joint, right joint], e.g. [LeftHip, RightHip]");
    map.facing = {r.text(f[0], "facing[0]"), r.text(f[1], "facing[1]")};
  }
  if (const YAML::Node s = root["scale"]) {
    if (!(s.IsScalar() && s.Scalar() == "auto")) {
      map.scale = r.number(s, "scale");
      if (!(map.scale >= kMinScale && map.scale <= kMaxScale))
        r.fail(s, "scale", formatted("must be in [%g, %g] (or auto)", kMinScale, kMaxScale));
    }
  }
  const YAML::Node points = root["points"];
  if (!points || !points.IsMap() || points.size() == 0)
    r.fail(points ? points : root, "points", "expected a mapping of puppet point: BVH joint");
  for (const auto& kv : points) {
    RetargetMap::PointMap pm;
    pm.point = kv.first.Scalar();
    const std::string field = "points." + pm.point;
    if (kv.second.IsScalar()) {
      pm.joint = r.text(kv.second, field);
    } else {
      r.onlyKeys(kv.second, field, {"joint", "anchor", "follow", "scale"});
      pm.joint = r.requiredText(kv.second, "joint", field);
      if (kv.second["anchor"]) pm.anchor = r.text(kv.second["anchor"], field + ".anchor");
      if (const YAML::Node f = kv.second["follow"]) {
        if (!f.IsSequence()) r.fail(f, field + ".follow", "expected a list of axes, e.g. [x, z]");
        pm.follow = {false, false, false};
        for (std::size_t i = 0; i < f.size(); ++i) {
          const std::string a = r.text(f[i], field + ".follow[" + std::to_string(i) + "]");
          if (a != "x" && a != "y" && a != "z")
            r.fail(f[i], field + ".follow[" + std::to_string(i) + "]", "expected x, y or z");
          pm.follow[a[0] - 'x'] = true;
        }
      }
      if (kv.second["scale"]) {
        pm.scale = r.number(kv.second["scale"], field + ".scale");
        if (!(pm.scale >= kMinScale && pm.scale <= kMaxScale))
          r.fail(kv.second["scale"], field + ".scale",
                 formatted("must be in [%g, %g]", kMinScale, kMaxScale));
      }
    }
    map.points.push_back(pm);
  }
  return map;
}

std::optional<RetargetMap> builtinRetargetMap(const std::string& model_name) {
  const embedded::File* f = embedded::kRetargetMaps.find(model_name + ".yaml");
  if (!f) return std::nullopt;
  return parseRetargetMap(f->text(), "built-in map " + model_name + ".yaml");
}

TargetMotion retargetBvh(const BvhClip& clip, const Model& model, const RetargetMap& map,
                         const Eigen::Matrix3Xd& rest_points) {
  auto fail = [&](const std::string& field, const std::string& what) {
    throw PerformanceFileError(map.source, 0, field, what);
  };
  if (!map.model.empty() && map.model != model.name)
    fail("model", "the map is for " + map.model + ", not " + model.name);
  auto joint = [&](const std::string& name, const std::string& field) {
    const int j = clip.jointIndex(name);
    if (j < 0) fail(field, clip.source + " has no joint '" + name + "'");
    return j;
  };
  const int root = joint(map.root, "root.joint");
  const int left = joint(map.facing.first, "facing[0]");
  const int right = joint(map.facing.second, "facing[1]");
  TargetMotion out;
  out.source = clip.source;
  std::vector<int> joints, anchors, points;
  for (const RetargetMap::PointMap& pm : map.points) {
    const int p = model.pointIndex(pm.point);
    if (p < 0)
      fail("points." + pm.point, "model " + model.name + " has no point '" + pm.point + "'" +
                                     detail::knownPoints(model));
    out.points.push_back(pm.point);
    points.push_back(p);
    joints.push_back(joint(pm.joint, "points." + pm.point + ".joint"));
    anchors.push_back(pm.anchor.empty() ? root : joint(pm.anchor, "points." + pm.point + ".anchor"));
  }
  // The clip in stage axes and metres.
  auto stage = [&](const Eigen::MatrixXd& positions, int j) {
    Eigen::Vector3d v;
    for (int a = 0; a < 3; ++a) v[a] = map.signs[a] * map.units_m * positions(j, map.axes[a]);
    return v;
  };
  const Eigen::MatrixXd first = jointPositions(clip, 0);
  const Eigen::Matrix3d A = pcr::rotationPM(pcr::puppetYaw(stage(first, left), stage(first, right)));
  double scale = map.scale;
  if (scale == 0) {
    double human_lo = 1e300, human_hi = -1e300, puppet_lo = 1e300, puppet_hi = -1e300;
    for (std::size_t i = 0; i < joints.size(); ++i) {
      const double h = (A * stage(first, joints[i])).z(), p = rest_points(2, points[i]);
      human_lo = std::min(human_lo, h);
      human_hi = std::max(human_hi, h);
      puppet_lo = std::min(puppet_lo, p);
      puppet_hi = std::max(puppet_hi, p);
    }
    if (!(human_hi - human_lo > 0.01 && puppet_hi - puppet_lo > 0.01))
      fail("scale", "auto needs mapped points at least 1 cm apart in height; give a number");
    scale = (puppet_hi - puppet_lo) / (human_hi - human_lo);
  }
  const int frames = clip.frames();
  out.positions_m.resize(frames, 3 * static_cast<int>(joints.size()));
  out.values.resize(frames, 0);
  const Eigen::Vector3d root0 = stage(first, root);
  double clip_motion_m = 0.0, target_motion_m = 0.0;  // the largest of each, over every point
  for (int f = 0; f < frames; ++f) {
    const Eigen::MatrixXd at = f == 0 ? first : jointPositions(clip, f);
    const Eigen::Vector3d root_f = stage(at, root);
    Eigen::Vector3d offset = Eigen::Vector3d::Zero();
    if (map.keep_root)
      offset = (scale * A * (root_f - root0)).cwiseMax(-map.root_box_m).cwiseMin(map.root_box_m);
    for (std::size_t i = 0; i < joints.size(); ++i) {
      const RetargetMap::PointMap& pm = map.points[i];
      const Eigen::Vector3d d = (stage(at, joints[i]) - stage(at, anchors[i])) -
                                (stage(first, joints[i]) - stage(first, anchors[i]));
      Eigen::Vector3d move = (pm.scale > 0 ? pm.scale : scale) * A * d + offset;
      for (int a = 0; a < 3; ++a)
        if (!pm.follow[a]) move[a] = 0.0;
      clip_motion_m = std::max(clip_motion_m, d.norm());
      target_motion_m = std::max(target_motion_m, move.norm());
      out.positions_m.block<1, 3>(f, 3 * static_cast<int>(i)) =
          (rest_points.col(points[i]) + move).transpose();
    }
    out.times_s.push_back(f * clip.frame_time_s);
  }
  // A clip that moves, reduced by the map to (almost) nothing, is no performance of it.
  if (clip_motion_m >= kMovingClip_m && target_motion_m < kStillTargets_m)
    fail("scale", formatted("the map reduces the clip's motion (up to %.3g m) to %.3g m: nothing "
                            "of it would be performed",
                            clip_motion_m, target_motion_m));
  return out;
}

TargetMotion readBvhPerformance(const ModelPtr& model, const std::string& text,
                                const std::string& source, const RetargetMap& map) {
  const BvhClip clip = parseBvh(text, source);
  TargetMotion out = retargetBvh(clip, *model, map, detail::restPoints(model).points_m);
  detail::checkTracks(out, [](int) { return 0; });
  return out;
}

}  // namespace marionette
