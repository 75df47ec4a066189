// SPDX-License-Identifier: BSD-3-Clause
// The stage: obstacles and bounds (docs/design.md, the stage).  Scene files are YAML, documented in
// docs/scene-format.md; the built-in scenes (empty, table, pillars, window, living-room) are
// embedded in the library with their meshes.
//
// Coordinates: a scene is written in stage coordinates -- z up, the floor at z = 0.  A model hangs
// in the stage at its stage pose (Model::stage_pose: where its world frame, the rig's, sits in
// the stage); the collision layer maps the scene into the model's world frame once.
//
// Thread safety: a Scene is immutable once loaded; share it between threads freely.
#pragma once

#include <Eigen/Geometry>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "marionette/environments/mesh.hpp"
#include "marionette/models/contact.hpp"
#include "marionette/models/shape.hpp"
#include "marionette/models/source_error.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// A scene description error: what() reads "file:line: field: message"; a mesh that cannot be
// read names the mesh's path in the message.
class SceneError : public SourceError {
 public:
  using SourceError::SourceError;
};

struct Obstacle {
  std::string name;
  Shape shape;                                                // any shape, planes included
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();     // in stage coordinates
  TriangleMeshPtr mesh;                                       // loaded mesh (shape.type == Mesh)
  Eigen::Vector3f color = Eigen::Vector3f(0.6f, 0.6f, 0.6f);  // RGB in [0, 1], for viewers
  // The puppet may touch it: a surface it stands and slides on, with Coulomb friction (the
  // integrator's contact rows: sceneContacts), rather than a collision.  Planes, spheres,
  // capsules and boxes (cylinders and meshes stay forbidden); a plane's default is true (the
  // stage's floor), every other shape's false.
  bool contact = false;
  double friction = kDefaultFriction;  // Coulomb's coefficient with the puppet, when contact
  SourceRef source;
};

// The workspace box the puppet's links must stay inside (stage coordinates).
struct StageBounds {
  Eigen::Vector3d min_m = Eigen::Vector3d::Zero();
  Eigen::Vector3d max_m = Eigen::Vector3d::Zero();
};

// The largest scene a loader accepts (docs/scene-format.md, limits), checked as it reads: the
// obstacles, and the mesh triangles summed over every mesh obstacle (an instance of a mesh
// shares its data with the others, but each is checked against the puppet on its own).
struct SceneLimits {
  static constexpr int kObstacles = 1000;
  static constexpr std::size_t kMeshTriangles = 500000;  // living-room: 20,848
  // Obstacles the puppet may touch (contact: true, every plane's default): each is a contact row
  // per contact point of the puppet in every step and rest pose (1,000 stacked planes asked for
  // gigabytes of the contact mode problem).  The built-in scenes have at most 3.
  static constexpr int kContactObstacles = 64;
};

class Scene {
 public:
  std::string name;
  std::string description;
  std::string source_file;  // "builtin:NAME" or the file's path
  std::vector<Obstacle> obstacles;
  std::optional<StageBounds> bounds;

  int obstacleIndex(const std::string& obstacle_name) const;  // -1 if absent
  size_t triangleCount() const;                               // over all mesh obstacles
};
using ScenePtr = std::shared_ptr<const Scene>;

// Parses a scene from YAML text.  Mesh paths are relative to `base_dir` (the scene file's
// folder; "" = the current directory).  Throws SceneError.
ScenePtr loadSceneString(const std::string& yaml_text, const std::string& source_name,
                         const std::string& base_dir = "");

// The same for text from elsewhere (a network request): meshes may only name the built-in
// meshes (e.g. "meshes/sofa.obj"); nothing is read from the file system.  Throws SceneError.
ScenePtr loadSceneStringBuiltinMeshes(const std::string& yaml_text, const std::string& source_name);

// Reads and parses a scene file.  Throws SceneError.
ScenePtr loadSceneFile(const std::string& path);

// A built-in name ("table", ...) or a path to a YAML file.  Throws SceneError.
ScenePtr loadScene(const std::string& name_or_path);

// Names of the built-in scenes.
std::vector<std::string> builtinSceneNames();

}  // namespace marionette

#pragma GCC visibility pop
