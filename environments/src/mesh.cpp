#include "marionette/environments/mesh.hpp"

#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <assimp/Importer.hpp>

#include "marionette/models/shape.hpp"

namespace marionette {

namespace {

// Flattens an assimp scene into one triangle soup (vertices merged per mesh by assimp's
// JoinIdenticalVertices; PreTransformVertices has applied the node transforms).
TriangleMeshPtr collect(const aiScene* scene, const std::string& name,
                        const Eigen::Vector3d& scale) {
  auto mesh = std::make_shared<TriangleMesh>();
  mesh->source = name;
  for (unsigned m = 0; m < scene->mNumMeshes; ++m) {
    const aiMesh* am = scene->mMeshes[m];
    const int base = static_cast<int>(mesh->vertices.size());
    for (unsigned v = 0; v < am->mNumVertices; ++v) {
      const aiVector3D& p = am->mVertices[v];
      mesh->vertices.emplace_back(p.x * scale.x(), p.y * scale.y(), p.z * scale.z());
    }
    for (unsigned f = 0; f < am->mNumFaces; ++f) {
      const aiFace& face = am->mFaces[f];
      if (face.mNumIndices != 3) continue;  // points and lines left by SortByPType
      mesh->triangles.emplace_back(base + static_cast<int>(face.mIndices[0]),
                                   base + static_cast<int>(face.mIndices[1]),
                                   base + static_cast<int>(face.mIndices[2]));
    }
  }
  for (const auto& v : mesh->vertices)
    if (const std::string problem = coordinateProblem(v); !problem.empty())
      throw MeshError("mesh '" + name + "' (scaled): a vertex's " + problem);
  if (mesh->triangles.empty()) throw MeshError("mesh '" + name + "' has no triangles");
  return mesh;
}

constexpr unsigned kImportFlags = aiProcess_Triangulate | aiProcess_JoinIdenticalVertices |
                                  aiProcess_PreTransformVertices | aiProcess_SortByPType;

}  // namespace

TriangleMeshPtr loadMeshFile(const std::string& path, const Eigen::Vector3d& scale) {
  Assimp::Importer importer;
  const aiScene* scene = importer.ReadFile(path, kImportFlags);
  if (!scene) throw MeshError("cannot load mesh '" + path + "': " + importer.GetErrorString());
  return collect(scene, path, scale);
}

TriangleMeshPtr loadMeshMemory(const void* data, size_t size, const std::string& format_hint,
                               const std::string& name, const Eigen::Vector3d& scale) {
  Assimp::Importer importer;
  const aiScene* scene = importer.ReadFileFromMemory(data, size, kImportFlags, format_hint.c_str());
  if (!scene) throw MeshError("cannot load mesh '" + name + "': " + importer.GetErrorString());
  return collect(scene, name, scale);
}

}  // namespace marionette
