// The view document (JSON) and the page around it.
#include <cmath>
#include <memory>
#include <sstream>

#include "embedded_viewer_assets.hpp"  // generated: page.html, viewer.js
#include "marionette/common/json_text.hpp"
#include "marionette/common/text.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/environments/mesh.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/viewer/view.hpp"

namespace marionette::viewer {
namespace {

void jsonVector3(std::ostream& os, const Eigen::Vector3d& v) {
  os << '[';
  writeJsonNumber(os, v.x());
  os << ',';
  writeJsonNumber(os, v.y());
  os << ',';
  writeJsonNumber(os, v.z());
  os << ']';
}

// Position then unit quaternion (x, y, z, w): three.js's order.
void jsonPose(std::ostream& os, const Eigen::Isometry3d& pose) {
  const Eigen::Quaterniond q(pose.linear());
  const Eigen::Vector3d& p = pose.translation();
  os << p.x() << ',' << p.y() << ',' << p.z() << ',' << q.x() << ',' << q.y() << ',' << q.z() << ','
     << q.w();
}

template <class T, class Write>
void jsonList(std::ostream& os, const std::vector<T>& items, Write write) {
  os << '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) os << ',';
    write(items[i]);
  }
  os << ']';
}

void jsonNames(std::ostream& os, const std::vector<std::string>& names) {
  jsonList(os, names, [&](const std::string& n) { writeJsonString(os, n); });
}

void jsonRows(std::ostream& os, const Eigen::MatrixXd& m) {
  os << '[';
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    os << (i ? ",\n[" : "\n[");
    for (Eigen::Index j = 0; j < m.cols(); ++j) {
      if (j) os << ',';
      writeJsonNumber(os, m(i, j));
    }
    os << ']';
  }
  os << ']';
}

void jsonColumn(std::ostream& os, const std::vector<double>& v) {
  jsonList(os, v, [&](double x) { writeJsonNumber(os, x); });
}

void jsonShape(std::ostream& os, const Shape& shape, const TriangleMesh* mesh) {
  os << "{\"type\":";
  writeJsonString(os, shapeTypeName(shape.type));
  switch (shape.type) {
    case ShapeType::Sphere: os << ",\"radius\":" << shape.radius_m; break;
    case ShapeType::Box:
      os << ",\"size\":";
      jsonVector3(os, shape.size_m);
      break;
    case ShapeType::Capsule:
    case ShapeType::Cylinder:
      os << ",\"radius\":" << shape.radius_m << ",\"length\":" << shape.length_m;
      break;
    case ShapeType::Plane:
      os << ",\"normal\":";
      jsonVector3(os, shape.normal);
      os << ",\"offset\":" << shape.offset_m;
      break;
    case ShapeType::Mesh:
      os << ",\"vertices\":";
      jsonList(os, mesh->vertices,
               [&](const Eigen::Vector3d& v) { os << v.x() << ',' << v.y() << ',' << v.z(); });
      os << ",\"triangles\":";
      jsonList(os, mesh->triangles,
               [&](const Eigen::Vector3i& t) { os << t.x() << ',' << t.y() << ',' << t.z(); });
      break;
  }
  os << '}';
}

// The unit of each kinematic variable: rad when it turns a joint, m otherwise (a translation or
// a string's length).
std::vector<std::string> inputUnits(const Model& model) {
  std::vector<std::string> units(model.nk(), "m");
  for (const Frame& f : model.frames)
    if (f.type == JointType::Rotate && f.variable >= model.nd())
      units[f.variable - model.nd()] = "rad";
  return units;
}

}  // namespace

void writeViewJson(const ModelPtr& model_ptr, const ScenePtr& scene, const Motion& motion,
                   const ViewOptions& options, std::ostream& os) {
  const Model& model = *model_ptr;
  const int n = static_cast<int>(motion.q.rows());
  if (n < 1 || motion.q.cols() != model.nq() || motion.tensions_N.rows() != n ||
      motion.tensions_N.cols() != model.nstrings())
    throw ViewError("the motion's sizes do not fit '" + model.name + "'");
  const std::vector<std::string>& traced =
      options.trace_points.empty() ? motion.trace_points : options.trace_points;
  for (const auto& p : traced)
    if (model.pointIndex(p) < 0) {
      throw FieldError("trace_points", "'" + p + "' is not a named point of '" + model.name +
                                           "' (it has: " + joinNames(itemNames(model.points)) +
                                           ")");
    }

  // Frames that carry link geometry, in model order; their meshes.
  std::vector<int> link_frames;
  std::vector<int> frame_slot(model.frames.size(), -1);
  for (const Geometry& g : model.geometry)
    if (frame_slot[g.frame] < 0) {
      frame_slot[g.frame] = static_cast<int>(link_frames.size());
      link_frames.push_back(g.frame);
    }
  std::vector<TriangleMeshPtr> link_meshes;
  for (const Geometry& g : model.geometry)
    link_meshes.push_back(g.shape.type == ShapeType::Mesh
                              ? loadMeshFile(g.shape.mesh_path, g.shape.mesh_scale)
                              : nullptr);

  // Per sample: kinematics in the stage frame.
  const Eigen::Isometry3d& stage = model.stage_pose;
  DynamicsData data(model);
  std::vector<std::string> frame_rows, end_rows;
  Eigen::MatrixXd lengths(n, model.nstrings());
  std::vector<std::vector<Eigen::Vector3d>> point_paths(model.points.size());
  Eigen::Vector3d lo = Eigen::Vector3d::Constant(INFINITY), hi = -lo;
  for (int i = 0; i < n; ++i) {
    const Eigen::VectorXd q = motion.q.row(i).transpose();
    forwardKinematics(model, data, q);
    computeStrings(model, data, q, false);
    std::ostringstream fr, er;
    fr.precision(7);
    er.precision(7);
    for (std::size_t k = 0; k < link_frames.size(); ++k) {
      Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
      pose.linear() = data.frame_R[link_frames[k]];
      pose.translation() = data.frame_p[link_frames[k]];
      if (k) fr << ',';
      jsonPose(fr, stage * pose);
      lo = lo.cwiseMin((stage * pose).translation());
      hi = hi.cwiseMax((stage * pose).translation());
    }
    for (int s = 0; s < model.nstrings(); ++s) {
      const Eigen::Vector3d a = stage * data.string_puppet_end[s];
      const Eigen::Vector3d e = stage * data.string_rig_end[s];
      er << (s ? "," : "") << a.x() << ',' << a.y() << ',' << a.z() << ',' << e.x() << ',' << e.y()
         << ',' << e.z();
      lengths(i, s) = data.length[s];
      lo = lo.cwiseMin(e);
      hi = hi.cwiseMax(e);
    }
    for (std::size_t p = 0; p < model.points.size(); ++p)
      point_paths[p].push_back(
          stage * pointPosition(data, model.points[p].frame, model.points[p].position_m));
    frame_rows.push_back(fr.str());
    end_rows.push_back(er.str());
  }

  // Clearance with FCL, as the planner checks it.
  std::vector<double> clearance, stage_clearance;
  int min_index = -1, stage_min_index = -1, first_collision = -1;
  std::string collision_pair;
  if (scene) {
    auto collision = std::make_shared<CollisionModel>(model_ptr, scene);
    CollisionChecker checker(collision);
    const TrajectoryCheck check = checker.checkTrajectory(motion.q.transpose(), true);
    for (int i = 0; i < n; ++i) {
      clearance.push_back(check.samples[i].clearance_m);
      stage_clearance.push_back(check.samples[i].stage_clearance_m);
      if (std::isfinite(clearance[i]) && (min_index < 0 || clearance[i] < clearance[min_index]))
        min_index = i;
      if (std::isfinite(stage_clearance[i]) &&
          (stage_min_index < 0 || stage_clearance[i] < stage_clearance[stage_min_index]))
        stage_min_index = i;
    }
    first_collision = check.first_collision;
    if (first_collision >= 0) collision_pair = check.first_pair.describe();
  }

  // The floor: under the stage bounds, or under the motion.
  Eigen::Vector3d floor_center(0.5 * (lo.x() + hi.x()), 0.5 * (lo.y() + hi.y()), 0.0);
  double floor_size = std::max(hi.x() - lo.x(), hi.y() - lo.y()) + 1.5;
  if (scene && scene->bounds) {
    const StageBounds& b = *scene->bounds;
    floor_center =
        Eigen::Vector3d(0.5 * (b.min_m.x() + b.max_m.x()), 0.5 * (b.min_m.y() + b.max_m.y()), 0.0);
    floor_size = std::max(b.max_m.x() - b.min_m.x(), b.max_m.y() - b.min_m.y()) + 1.0;
  }
  floor_size = std::ceil(std::max(floor_size, 2.0) * 2.0) / 2.0;

  os.precision(7);
  os << "{\"format\":\"marionette-view\",\"version\":1,\n\"title\":";
  writeJsonString(os, motion.title);
  os << ",\n\"info\":[";
  std::vector<std::pair<std::string, std::string>> info = {{"model", model.name}};
  info.push_back({"scene", scene ? scene->name : "none"});
  info.insert(info.end(), motion.info.begin(), motion.info.end());
  for (std::size_t i = 0; i < info.size(); ++i) {
    os << (i ? "," : "") << '[';
    writeJsonString(os, info[i].first);
    os << ',';
    writeJsonString(os, info[i].second);
    os << ",false]";
  }
  std::vector<std::string> problems = motion.problems;
  if (first_collision >= 0) {
    std::ostringstream c;
    c.precision(3);
    c << "collision at " << first_collision / motion.rate_hz << " s: " << collision_pair;
    problems.insert(problems.begin(), c.str());
  }
  for (const auto& p : problems) {
    os << (info.empty() ? "" : ",") << "[\"\",";
    writeJsonString(os, p);
    os << ",true]";
  }
  os << "],\n\"rate_hz\":" << motion.rate_hz << ",\"default_time\":" << options.at_s;
  os << ",\n\"t\":[";
  for (int i = 0; i < n; ++i) os << (i ? "," : "") << i / motion.rate_hz;
  os << "],\n\"frames\":";
  std::vector<std::string> frame_names;
  for (int f : link_frames) frame_names.push_back(model.frames[f].name);
  jsonNames(os, frame_names);
  os << ",\n\"links\":[";
  for (std::size_t g = 0; g < model.geometry.size(); ++g) {
    const Geometry& geo = model.geometry[g];
    os << (g ? ",\n" : "\n") << "{\"name\":";
    writeJsonString(os, geo.name.empty() ? model.frames[geo.frame].name : geo.name);
    os << ",\"frame\":" << frame_slot[geo.frame] << ",\"pose\":[";
    jsonPose(os, geo.pose);
    os << "],\"shape\":";
    jsonShape(os, geo.shape, link_meshes[g].get());
    os << '}';
  }
  os << "],\n\"frame_poses\":[";
  for (int i = 0; i < n; ++i) os << (i ? ",\n[" : "\n[") << frame_rows[i] << ']';
  os << "],\n\"strings\":";
  jsonList(os, model.strings, [&](const String& s) {
    os << "{\"name\":";
    writeJsonString(os, s.name);
    os << '}';
  });
  os << ",\n\"string_ends\":[";
  for (int i = 0; i < n; ++i) os << (i ? ",\n[" : "\n[") << end_rows[i] << ']';
  os << "],\n\"string_lengths\":";
  jsonRows(os, lengths);
  os << ",\n\"tensions\":{\"names\":";
  std::vector<std::string> string_names;
  for (const auto& s : model.strings) string_names.push_back(s.name);
  jsonNames(os, string_names);
  os << ",\"samples\":";
  jsonRows(os, motion.tensions_N);
  os << "},\n\"inputs\":{\"names\":";
  std::vector<std::string> input_names;
  for (const auto& k : model.kinematic) input_names.push_back(k.name);
  jsonNames(os, input_names);
  os << ",\"units\":";
  jsonNames(os, inputUnits(model));
  os << ",\"samples\":";
  jsonRows(os, motion.q.rightCols(model.nk()));
  os << "},\n\"points\":[";
  for (std::size_t p = 0; p < model.points.size(); ++p) {
    os << (p ? ",\n" : "\n") << "{\"name\":";
    writeJsonString(os, model.points[p].name);
    os << ",\"path\":";
    jsonList(os, point_paths[p], [&](const Eigen::Vector3d& x) { jsonVector3(os, x); });
    os << '}';
  }
  os << "],\n\"highlight_points\":";
  jsonNames(os, traced);
  os << ",\n\"targets\":";
  jsonList(os, motion.goals, [&](const GoalRegion& g) {
    os << "{\"name\":";
    writeJsonString(os, g.point);
    os << ",\"position\":";
    jsonVector3(os, g.position_m);
    os << ",\"radius\":" << g.radius_m << '}';
  });
  os << ",\n\"clearance\":";
  if (scene) {
    os << "{\"samples\":";
    jsonColumn(os, clearance);
    os << ",\n\"stage_samples\":";
    jsonColumn(os, stage_clearance);
    os << ",\"min_index\":" << min_index << ",\"stage_min_index\":" << stage_min_index << '}';
  } else {
    os << "null";
  }
  os << ",\n\"collision\":{\"first_index\":" << first_collision << ",\"pair\":";
  writeJsonString(os, collision_pair);
  os << "},\n\"goal_index\":" << motion.goal_sample;
  os << ",\n\"obstacles\":[";
  if (scene)
    for (std::size_t o = 0; o < scene->obstacles.size(); ++o) {
      const Obstacle& ob = scene->obstacles[o];
      os << (o ? ",\n" : "\n") << "{\"name\":";
      writeJsonString(os, ob.name);
      os << ",\"color\":[" << ob.color.x() << ',' << ob.color.y() << ',' << ob.color.z()
         << "],\"pose\":[";
      jsonPose(os, ob.pose);
      os << "],\"shape\":";
      jsonShape(os, ob.shape, ob.mesh.get());
      os << '}';
    }
  os << "],\n\"bounds\":";
  if (scene && scene->bounds) {
    os << "{\"min\":";
    jsonVector3(os, scene->bounds->min_m);
    os << ",\"max\":";
    jsonVector3(os, scene->bounds->max_m);
    os << '}';
  } else {
    os << "null";
  }
  os << ",\n\"floor_center_m\":";
  jsonVector3(os, floor_center);
  os << ",\"floor_size_m\":" << floor_size;
  // Looking from the front-right, a little above: the audience's view of a stage whose front
  // faces -y.
  os << ",\"camera_direction\":[0.55,-1.0,0.45]}\n";
}

void writeViewPage(const ModelPtr& model, const ScenePtr& scene, const Motion& motion,
                   const ViewOptions& options, std::ostream& os) {
  const embedded::File* page = embedded::viewer_assets.find("page.html");
  const embedded::File* script = embedded::viewer_assets.find("viewer.js");
  if (!page || !script) throw ViewError("the viewer's page was not built into this program");
  std::ostringstream document;
  writeViewJson(model, scene, motion, options, document);
  std::string title;
  for (char c : motion.title) {
    if (c == '<')
      title += "&lt;";
    else if (c == '&')
      title += "&amp;";
    else
      title += c;
  }
  // Placeholders are found in the template only, never in what is put in their place.
  const std::string shell = page->text();
  const std::vector<std::pair<std::string, std::string>> parts = {
      {"@TITLE@", title}, {"@VIEW_DATA@", document.str()}, {"@VIEWER_JS@", script->text()}};
  std::size_t at = 0;
  for (const auto& [placeholder, content] : parts) {
    const std::size_t p = shell.find(placeholder, at);
    if (p == std::string::npos) throw ViewError("the viewer's page has no " + placeholder);
    os << shell.substr(at, p - at) << content;
    at = p + placeholder.size();
  }
  os << shell.substr(at);
}

}  // namespace marionette::viewer
