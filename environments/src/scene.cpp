// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/environments/scene.hpp"

#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "embedded_kSceneFiles.hpp"  // generated: the built-in files
#include "marionette/models/description_yaml.hpp"

namespace marionette {

namespace {

using Reader = YamlReader<SceneError>;

// Finds a mesh by the path written in the scene file and loads it (throws MeshError).
using MeshResolver = std::function<TriangleMeshPtr(const std::string&, const Eigen::Vector3d&)>;

std::string extensionOf(const std::string& path) {
  const size_t dot = path.find_last_of('.');
  return dot == std::string::npos ? std::string() : path.substr(dot + 1);
}

std::string stemOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  return dot == std::string::npos ? base : base.substr(0, dot);
}

Eigen::Vector3f readColor(const Reader& r, const YAML::Node& n, const std::string& field) {
  const Eigen::Vector3d c = r.vec3(n, field);
  if ((c.array() < 0.0).any() || (c.array() > 1.0).any())
    r.fail(n, field, "colour components are in [0, 1]");
  return c.cast<float>();
}

ScenePtr parse(const YAML::Node& root, const std::string& source_name,
               const MeshResolver& resolve_mesh) {
  Reader r(source_name);
  if (!root.IsMap()) r.fail(root, "", "a scene file is a YAML mapping (obstacles:, ...)");
  r.onlyKeys(root, "", {"name", "description", "bounds", "obstacles"});
  auto scene = std::make_shared<Scene>();
  scene->name = root["name"] ? r.text(root["name"], "name") : stemOf(source_name);
  scene->source_file = source_name;
  if (root["description"]) scene->description = r.text(root["description"], "description");

  if (const YAML::Node b = root["bounds"]) {
    r.onlyKeys(b, "bounds", {"min", "max"});
    if (!b["min"] || !b["max"]) r.fail(b, "bounds", "give both min: [x, y, z] and max: [x, y, z]");
    StageBounds bounds{r.vec3(b["min"], "bounds.min"), r.vec3(b["max"], "bounds.max")};
    if (const std::string p = coordinateProblem(bounds.min_m); !p.empty())
      r.fail(b["min"], "bounds.min", p);
    if (const std::string p = coordinateProblem(bounds.max_m); !p.empty())
      r.fail(b["max"], "bounds.max", p);
    for (int k = 0; k < 3; ++k)
      if (!(bounds.min_m[k] < bounds.max_m[k]))
        r.fail(b, "bounds",
               "min must be below max on every axis (axis " + std::to_string(k) + ": " +
                   std::to_string(bounds.min_m[k]) + " >= " + std::to_string(bounds.max_m[k]) +
                   ")");
    scene->bounds = bounds;
  }

  std::map<std::pair<std::string, std::vector<double>>, TriangleMeshPtr> mesh_cache;
  std::set<std::string> names;
  const YAML::Node list = r.list(root, "obstacles");
  if (list && list.size() > static_cast<std::size_t>(SceneLimits::kObstacles))
    r.fail(list, "obstacles",
           std::to_string(list.size()) + " obstacles; a scene holds at most " +
               std::to_string(SceneLimits::kObstacles));
  std::size_t mesh_triangles = 0;
  int contact_obstacles = 0;
  for (size_t i = 0; list && i < list.size(); ++i) {
    const YAML::Node n = list[i];
    const std::string f = indexedField("obstacles", i);
    r.onlyKeys(n, f,
               {"name", "pose", "color", "contact", "friction", "sphere", "box", "capsule",
                "cylinder", "plane", "mesh"});
    Obstacle o;
    o.source = sourceRef(n, f);
    o.name = r.requiredText(n, "name", f);
    if (o.name.empty()) r.fail(n["name"], f + ".name", "must not be empty");
    if (!names.insert(o.name).second)
      r.fail(n["name"], f + ".name", "duplicate obstacle name '" + o.name + "'");
    o.shape = readShape(r, n, f,
                        {ShapeType::Sphere, ShapeType::Box, ShapeType::Capsule, ShapeType::Cylinder,
                         ShapeType::Plane, ShapeType::Mesh});
    if (n["pose"]) {
      o.pose = r.pose(n["pose"], f + ".pose", "position");
      if (const std::string p = coordinateProblem(o.pose.translation()); !p.empty())
        r.fail(n["pose"], f + ".pose.position", p);
    }
    if (n["color"]) o.color = readColor(r, n["color"], f + ".color");
    o.contact = o.shape.type == ShapeType::Plane;
    if (n["contact"]) o.contact = r.flag(n["contact"], f + ".contact");
    if (o.contact && (o.shape.type == ShapeType::Cylinder || o.shape.type == ShapeType::Mesh))
      r.fail(n["contact"], f + ".contact",
             "only a plane, sphere, capsule or box may be touched (touching a " +
                 std::string(shapeTypeName(o.shape.type)) + " is a collision)");
    if (o.contact && ++contact_obstacles > SceneLimits::kContactObstacles)
      r.fail(n["contact"] ? n["contact"] : n, f + ".contact",
             std::to_string(contact_obstacles) + " obstacles the puppet may touch; a scene " +
                 "holds at most " + std::to_string(SceneLimits::kContactObstacles) +
                 " (a plane is touched unless it says contact: false)");
    if (n["friction"]) {
      if (!o.contact)
        r.fail(n["friction"], f + ".friction",
               "only an obstacle the puppet may touch (contact: true; a plane's default) has "
               "friction");
      o.friction = r.number(n["friction"], f + ".friction");
      if (!(o.friction >= 0.0 && o.friction <= kMaxFriction))
        r.fail(n["friction"], f + ".friction",
               "must be between 0 and " + std::to_string(static_cast<int>(kMaxFriction)) +
                   " (got " + std::to_string(o.friction) + ")");
    }
    if (o.shape.type == ShapeType::Mesh) {
      const auto key = std::make_pair(
          o.shape.mesh_path,
          std::vector<double>{o.shape.mesh_scale[0], o.shape.mesh_scale[1], o.shape.mesh_scale[2]});
      auto it = mesh_cache.find(key);
      if (it == mesh_cache.end()) {
        try {
          it = mesh_cache.emplace(key, resolve_mesh(o.shape.mesh_path, o.shape.mesh_scale)).first;
        } catch (const MeshError& e) {
          r.fail(n["mesh"], f + ".mesh.file", e.what());
        }
      }
      o.mesh = it->second;
      mesh_triangles += o.mesh->triangles.size();
      if (mesh_triangles > SceneLimits::kMeshTriangles)
        r.fail(n["mesh"], f + ".mesh",
               "the scene's mesh obstacles reach " + std::to_string(mesh_triangles) +
                   " triangles in all; a scene holds at most " +
                   std::to_string(SceneLimits::kMeshTriangles));
    }
    scene->obstacles.push_back(std::move(o));
  }
  return scene;
}

ScenePtr parseText(const std::string& text, const std::string& source_name,
                   const MeshResolver& resolve_mesh) {
  return parseYamlDocument<SceneError, ScenePtr>(text, source_name, [&](const YAML::Node& root) {
    return parse(root, source_name, resolve_mesh);
  });
}

}  // namespace

int Scene::obstacleIndex(const std::string& obstacle_name) const {
  for (size_t i = 0; i < obstacles.size(); ++i)
    if (obstacles[i].name == obstacle_name) return static_cast<int>(i);
  return -1;
}

size_t Scene::triangleCount() const {
  size_t n = 0;
  for (const auto& o : obstacles)
    if (o.mesh) n += o.mesh->triangles.size();
  return n;
}

ScenePtr loadSceneString(const std::string& text, const std::string& source_name,
                         const std::string& base_dir) {
  const MeshResolver from_disk = [&](const std::string& path, const Eigen::Vector3d& scale) {
    const bool relative = !path.empty() && path[0] != '/' && !base_dir.empty();
    return loadMeshFile(relative ? base_dir + "/" + path : path, scale);
  };
  return parseText(text, source_name, from_disk);
}

ScenePtr loadSceneFile(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return loadSceneString(readDescriptionFile<SceneError>(path, "scene"), path,
                         slash == std::string::npos ? "." : path.substr(0, slash));
}

namespace {
// Meshes from the library's embedded files only: no file system access.  Each is read once per
// process (assimp took most of an inline scene's time) and shared, unscaled, by every scene.
TriangleMeshPtr embeddedMesh(const std::string& path, const Eigen::Vector3d& scale) {
  const embedded::File* file = embedded::kSceneFiles.find(path);
  if (!file) throw MeshError("cannot load mesh '" + path + "': not among the built-in meshes");
  static std::mutex mutex;
  static std::map<const embedded::File*, TriangleMeshPtr> read;  // at most one per built-in file
  TriangleMeshPtr mesh;
  {
    std::lock_guard<std::mutex> lock(mutex);
    TriangleMeshPtr& cached = read[file];
    if (!cached)
      cached = loadMeshMemory(file->data, file->size, extensionOf(path), "builtin:" + path);
    mesh = cached;
  }
  return scaledMesh(mesh, scale);
}
}  // namespace

ScenePtr loadSceneStringBuiltinMeshes(const std::string& yaml_text,
                                      const std::string& source_name) {
  return parseText(yaml_text, source_name, embeddedMesh);
}

ScenePtr loadScene(const std::string& name_or_path) {
  if (const embedded::File* file = embedded::kSceneFiles.find(name_or_path + ".yaml"))
    return parseText(file->text(), "builtin:" + name_or_path, embeddedMesh);
  if (std::ifstream(name_or_path)) return loadSceneFile(name_or_path);
  throwNoSuch<SceneError>("scene", name_or_path, builtinSceneNames());
}

std::vector<std::string> builtinSceneNames() {
  return embedded::kSceneFiles.topLevelNames("yaml");
}

}  // namespace marionette
