// SPDX-License-Identifier: BSD-3-Clause
#include "reach_command.hpp"

#include <iostream>
#include <sstream>

#include "cli_util.hpp"
#include "marionette/common/files.hpp"
#include "marionette/common/json_text.hpp"
#include "marionette/common/text.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/performance/reach.hpp"
#include "marionette/problem/motion_problem.hpp"
#include "marionette/viewer/view.hpp"

namespace marionette::cli {
namespace {

void jsonVector(std::ostream& os, const Eigen::Vector3d& v) {
  os << '[';
  for (int a = 0; a < 3; ++a) writeJsonNumber(os << (a ? ", " : ""), v[a]);
  os << ']';
}

void jsonCloud(std::ostream& os, const Eigen::Matrix3Xd& c) {
  os << '[';
  for (Eigen::Index i = 0; i < c.cols(); ++i) jsonVector(os << (i ? ",\n        " : ""), c.col(i));
  os << ']';
}

// {"model", "scene", "poses_tried", ..., "points": {P: {rest_m, held: {min_m, max_m, points_m},
// swung: {...}}}}
void writeReachJson(const Reach& r, const std::string& model, const std::string& scene,
                    std::ostream& os) {
  os << "{\n  \"model\": ";
  writeJsonString(os, model);
  os << ",\n  \"scene\": ";
  writeJsonString(os, scene);
  os << ",\n  \"poses_tried\": " << r.poses_tried << ", \"poses_held\": " << r.poses_held
     << ", \"no_rest_pose\": " << r.no_rest_pose << ", \"in_collision\": " << r.in_collision
     << ",\n  \"swings_tried\": " << r.swings_tried << ", \"swings_failed\": " << r.swings_failed
     << ",\n  \"points\": {";
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const PointReach& p = r.points[i];
    os << (i ? ",\n    " : "\n    ");
    writeJsonString(os, p.point);
    os << ": {\"rest_m\": ";
    jsonVector(os, p.rest_m);
    for (const auto& [name, lo, hi, cloud] :
         {std::tuple{"held", &p.held_min_m, &p.held_max_m, &p.held_m},
          std::tuple{"swung", &p.swung_min_m, &p.swung_max_m, &p.swung_m}}) {
      os << ",\n      \"" << name << "\": {\"min_m\": ";
      jsonVector(os, *lo);
      os << ", \"max_m\": ";
      jsonVector(os, *hi);
      os << ",\n       \"points_m\": ";
      jsonCloud(os, *cloud);
      os << '}';
    }
    os << '}';
  }
  os << "\n  }\n}\n";
}

std::string extent(const Eigen::Vector3d& lo, const Eigen::Vector3d& hi,
                   const Eigen::Vector3d& rest) {
  if (!lo.allFinite()) return "none";
  std::string out;
  for (int a = 0; a < 3; ++a)
    out +=
        formatted("%s%c %+.3f..%+.3f", a ? "  " : "", "xyz"[a], lo[a] - rest[a], hi[a] - rest[a]);
  return out;
}

}  // namespace

int cmdReach(int argc, char** argv) {
  const Args a =
      parseArgs(argc, argv, 2,
                {"--model", "--scene", "--point", "--poses", "--swings", "--out", "--json"}, {});
  if (!a.values.count("--model")) throw std::invalid_argument("reach needs --model NAME|FILE");
  if (!a.values.count("--point"))
    throw std::invalid_argument("reach needs --point NAME[,NAME...] (a named point of the model)");
  for (const char* flag : {"--out", "--json"})
    if (a.values.count(flag)) checkWritable(a.values.at(flag));
  const ModelPtr model = loadModel(a.values.at("--model"));
  const ScenePtr scene = loadScene(a.values.count("--scene") ? a.values.at("--scene") : "empty");
  const std::vector<std::string> points = splitCommas(a.values.at("--point"));
  for (const std::string& p : points)
    if (model->pointIndex(p) < 0) {
      std::string known;
      for (const Point& q : model->points) known += (known.empty() ? "" : ", ") + q.name;
      throw std::invalid_argument("--point: model " + model->name + " has no point '" + p +
                                  "' (its points: " + known + ")");
    }
  ReachOptions o;
  if (a.values.count("--poses"))
    o.poses = static_cast<int>(wholeNumber("--poses", a.values.at("--poses"), 1, 100000));
  if (a.values.count("--swings"))
    o.swings = static_cast<int>(wholeNumber("--swings", a.values.at("--swings"), 0, 10000));

  const auto collision = std::make_shared<CollisionModel>(model, scene, problemCollisionOptions());
  const Reach r = computeReach(collision, points, o);
  std::cout << "reach of " << model->name << " in " << scene->name << ": " << r.poses_held << " of "
            << r.poses_tried << " rig poses held (" << r.no_rest_pose << " without a rest pose, "
            << r.in_collision << " in collision); " << r.swings_tried << " swings ("
            << r.swings_failed << " failed)\n"
            << "  (m from where each point hangs at rest, stage axes)\n";
  for (const PointReach& p : r.points)
    std::cout << formatted("  %-12s held   %s\n", p.point.c_str(),
                           extent(p.held_min_m, p.held_max_m, p.rest_m).c_str())
              << formatted("  %-12s swung  %s\n", "",
                           extent(p.swung_min_m, p.swung_max_m, p.rest_m).c_str());

  std::cout << std::flush;
  if (a.values.count("--json"))
    writeFileAtomically(a.values.at("--json"),
                        [&](std::ostream& os) { writeReachJson(r, model->name, scene->name, os); });
  if (a.values.count("--out")) {
    viewer::Motion motion = viewer::motionAtRest(model);
    motion.title = model->name + " in " + scene->name + ": reach of " + a.values.at("--point");
    viewer::ViewOptions view;
    view.trace_points = points;
    for (const PointReach& p : r.points) {
      view.clouds.push_back({p.point, p.point + " held", p.held_m, false});
      view.clouds.push_back({p.point, p.point + " swung", p.swung_m, true});
    }
    std::ostringstream page;
    viewer::writeViewPage(model, scene, motion, view, page);
    const std::string html = page.str();
    writeFileAtomically(a.values.at("--out"), [&](std::ostream& os) { os << html; });
    std::cerr << "reach: wrote " << a.values.at("--out") << "\n";
  }
  return 0;
}

}  // namespace marionette::cli
