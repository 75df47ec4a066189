// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/environments/mesh.hpp"

#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <assimp/Importer.hpp>

#include "marionette/models/shape.hpp"

namespace marionette {

namespace {

// Flattens an assimp scene into one triangle soup, as read (vertices merged per mesh by
// assimp's JoinIdenticalVertices; PreTransformVertices has applied the node transforms).
std::shared_ptr<TriangleMesh> collect(const aiScene* scene, const std::string& name) {
  auto mesh = std::make_shared<TriangleMesh>();
  mesh->source = name;
  for (unsigned m = 0; m < scene->mNumMeshes; ++m) {
    const aiMesh* am = scene->mMeshes[m];
    const int base = static_cast<int>(mesh->vertices.size());
    for (unsigned v = 0; v < am->mNumVertices; ++v) {
      const aiVector3D& p = am->mVertices[v];
      mesh->vertices.emplace_back(p.x, p.y, p.z);
    }
    for (unsigned f = 0; f < am->mNumFaces; ++f) {
      const aiFace& face = am->mFaces[f];
      if (face.mNumIndices != 3) continue;  // points and lines left by SortByPType
      mesh->triangles.emplace_back(base + static_cast<int>(face.mIndices[0]),
                                   base + static_cast<int>(face.mIndices[1]),
                                   base + static_cast<int>(face.mIndices[2]));
    }
  }
  return mesh;
}

constexpr unsigned kImportFlags = aiProcess_Triangulate | aiProcess_JoinIdenticalVertices |
                                  aiProcess_PreTransformVertices | aiProcess_SortByPType;

}  // namespace

TriangleMeshPtr loadMeshFile(const std::string& path, const Eigen::Vector3d& scale) {
  Assimp::Importer importer;
  const aiScene* scene = importer.ReadFile(path, kImportFlags);
  if (!scene) throw MeshError("cannot load mesh '" + path + "': " + importer.GetErrorString());
  return scaledMesh(collect(scene, path), scale);
}

TriangleMeshPtr loadMeshMemory(const void* data, size_t size, const std::string& format_hint,
                               const std::string& name, const Eigen::Vector3d& scale) {
  Assimp::Importer importer;
  const aiScene* scene = importer.ReadFileFromMemory(data, size, kImportFlags, format_hint.c_str());
  if (!scene) throw MeshError("cannot load mesh '" + name + "': " + importer.GetErrorString());
  return scaledMesh(collect(scene, name), scale);
}

TriangleMeshPtr scaledMesh(const TriangleMeshPtr& mesh, const Eigen::Vector3d& scale) {
  TriangleMeshPtr out = mesh;
  if (scale != Eigen::Vector3d::Ones()) {
    auto copy = std::make_shared<TriangleMesh>(*mesh);
    for (Eigen::Vector3d& v : copy->vertices) v = v.cwiseProduct(scale);
    out = copy;
  }
  for (const auto& v : out->vertices)
    if (const std::string problem = coordinateProblem(v); !problem.empty())
      throw MeshError("mesh '" + out->source + "' (scaled): a vertex's " + problem);
  if (out->triangles.empty()) throw MeshError("mesh '" + out->source + "' has no triangles");
  return out;
}

}  // namespace marionette
