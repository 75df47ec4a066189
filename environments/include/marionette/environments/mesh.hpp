// SPDX-License-Identifier: BSD-3-Clause
// Triangle meshes (STL, OBJ, PLY, and whatever else assimp reads) for obstacles and links.
#pragma once

#include <Eigen/Core>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "marionette/models/error.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// An indexed triangle soup in its own coordinates (metres, after scaling).
struct TriangleMesh {
  std::string source;                      // the path (or built-in name) it was read from
  std::vector<Eigen::Vector3d> vertices;   // m
  std::vector<Eigen::Vector3i> triangles;  // indices into vertices, counter-clockwise outward
};
using TriangleMeshPtr = std::shared_ptr<const TriangleMesh>;

// What a mesh that cannot be read throws; what() names the path and assimp's reason.
class MeshError : public ErrorOf<std::runtime_error> {
 public:
  using ErrorOf<std::runtime_error>::ErrorOf;
};

// Reads every mesh in a file (node transforms applied, polygons triangulated), each vertex
// scaled per axis by `scale`.  Throws MeshError if the file is missing, unreadable, or holds no
// triangles.
TriangleMeshPtr loadMeshFile(const std::string& path,
                             const Eigen::Vector3d& scale = Eigen::Vector3d::Ones());

// The same from bytes in memory; `format_hint` is the file extension ("stl", "obj", "ply");
// `name` is used in messages.
TriangleMeshPtr loadMeshMemory(const void* data, size_t size, const std::string& format_hint,
                               const std::string& name,
                               const Eigen::Vector3d& scale = Eigen::Vector3d::Ones());

// `mesh` with each vertex scaled per axis (the same mesh when `scale` is all ones), checked as a
// loaded mesh is: every vertex within the stage's range, at least one triangle.
TriangleMeshPtr scaledMesh(const TriangleMeshPtr& mesh, const Eigen::Vector3d& scale);

}  // namespace marionette

#pragma GCC visibility pop
