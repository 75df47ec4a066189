// SPDX-License-Identifier: BSD-3-Clause
// The view document (JSON) -- the model's links and strings, the stage, and one motion or two
// (motion_json.cpp) -- and the page around it.
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "embedded_viewer_assets.hpp"  // generated: page.html, viewer.js
#include "json_parts.hpp"
#include "marionette/common/text.hpp"
#include "marionette/environments/mesh.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/viewer/view.hpp"
#include "motion_json.hpp"

namespace marionette::viewer {
namespace {

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

}  // namespace

Eigen::Vector3d parseCameraDirection(const std::string& text) {
  // "top" leans a little toward -y: straight down, the orbit controls (z up) have no heading.
  // A little above (1 in 4, 14 degrees): the floor and the shadows on it show where the puppet is.
  if (text == "front") return {0.0, -1.0, 0.25};
  if (text == "side") return {1.0, 0.0, 0.25};
  if (text == "top") return {0.0, -0.02, 1.0};
  Eigen::Vector3d d;
  char extra = 0;
  if (std::sscanf(text.c_str(), "%lf,%lf,%lf%c", &d.x(), &d.y(), &d.z(), &extra) != 3 ||
      !d.allFinite())
    throw FieldError("camera",
                     "expected front, side, top or a direction X,Y,Z (got '" + text + "')");
  if (!(d.norm() > 1e-9)) throw FieldError("camera", "the direction X,Y,Z must not be zero");
  return d;
}

ViewOptions::Fit parseFit(const std::string& text) {
  if (text == "puppet") return ViewOptions::Fit::Puppet;
  if (text == "motion") return ViewOptions::Fit::Motion;
  if (text == "stage") return ViewOptions::Fit::Stage;
  throw FieldError("fit", "expected puppet, motion or stage (got '" + text + "')");
}

void writeViewJson(const ModelPtr& model_ptr, const ScenePtr& scene, const Motion& motion,
                   const ViewOptions& options, std::ostream& os) {
  const Model& model = *model_ptr;
  const std::vector<std::string>& traced =
      options.trace_points.empty() ? motion.trace_points : options.trace_points;
  for (const auto& p : traced)
    if (model.pointIndex(p) < 0) {
      throw FieldError("trace_points", "'" + p + "' is not a named point of '" + model.name +
                                           "' (it has: " + joinNames(itemNames(model.points)) +
                                           ")");
    }
  const std::vector<int> link_frames = linkFrames(model);
  std::vector<int> frame_slot(model.frames.size(), -1);
  for (std::size_t k = 0; k < link_frames.size(); ++k)
    frame_slot[link_frames[k]] = static_cast<int>(k);
  std::vector<TriangleMeshPtr> link_meshes;
  for (const Geometry& g : model.geometry)
    link_meshes.push_back(g.shape.type == ShapeType::Mesh
                              ? loadMeshFile(g.shape.mesh_path, g.shape.mesh_scale)
                              : nullptr);

  os.precision(7);
  os << "{\"format\":\"marionette-view\",\"version\":1,\n\"setting\":";
  jsonPairs(os, {{"model", model.name}, {"scene", scene ? scene->name : "none"}});
  // The motion shown, then the one compared with it (drawn as a ghost), member for member.
  Eigen::AlignedBox3d extent;
  os << ",\n";
  writeMotionMembers(model_ptr, scene, link_frames, motion, extent, os);
  os << ",\n\"compare\":";
  if (options.compare) {
    os << '{';
    writeMotionMembers(model_ptr, scene, link_frames, *options.compare, extent, os);
    os << '}';
  } else {
    os << "null";
  }

  os << ",\n\"default_time\":" << options.at_s << ",\n\"frames\":";
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
  os << "],\n\"strings\":";
  jsonList(os, model.strings, [&](const String& s) {
    os << "{\"name\":";
    writeJsonString(os, s.name);
    os << '}';
  });
  os << ",\n\"highlight_points\":";
  jsonNames(os, traced);
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

  // The floor: under the stage bounds, or under the motions.
  const Eigen::Vector3d lo = extent.min(), hi = extent.max();
  Eigen::Vector3d floor_center(0.5 * (lo.x() + hi.x()), 0.5 * (lo.y() + hi.y()), 0.0);
  double floor_size = std::max(hi.x() - lo.x(), hi.y() - lo.y()) + 1.5;
  if (scene && scene->bounds) {
    const StageBounds& b = *scene->bounds;
    floor_center =
        Eigen::Vector3d(0.5 * (b.min_m.x() + b.max_m.x()), 0.5 * (b.min_m.y() + b.max_m.y()), 0.0);
    floor_size = std::max(b.max_m.x() - b.min_m.x(), b.max_m.y() - b.min_m.y()) + 1.0;
  }
  floor_size = std::ceil(std::max(floor_size, 2.0) * 2.0) / 2.0;
  os << ",\n\"floor_center_m\":";
  jsonVector3(os, floor_center);
  os << ",\"floor_size_m\":" << floor_size;
  os << ",\"camera_direction\":";
  jsonVector3(os, options.camera_direction.normalized());
  static const char* kFits[] = {"puppet", "motion", "stage"};
  os << ",\"fit\":\"" << kFits[static_cast<int>(options.fit)] << '"';
  os << ",\n\"clouds\":";
  jsonList(os, options.clouds, [&](const ViewOptions::Cloud& c) {
    if (!c.points_m.allFinite())
      throw FieldError("clouds", "the cloud '" + c.name + "' has a coordinate that is not finite");
    os << "{\"point\":";
    writeJsonString(os, c.point);
    os << ",\"name\":";
    writeJsonString(os, c.name);
    os << ",\"faint\":" << (c.faint ? "true" : "false") << ",\"points\":[";
    for (Eigen::Index i = 0; i < c.points_m.cols(); ++i) {
      os << (i ? "," : "");
      jsonVector3(os, c.points_m.col(i));
    }
    os << "]}";
  });
  os << "}\n";
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
