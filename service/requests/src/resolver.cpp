// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/service/resolver.hpp"

#include <algorithm>

#include "marionette/common/text.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/service/wire.hpp"

namespace marionette::service {
namespace {

using wire::RequestError;

bool contains(const std::vector<std::string>& all, const std::string& name) {
  return std::find(all.begin(), all.end(), name) != all.end();
}

}  // namespace

ModelPtr Resolver::builtinModel(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& m = models_[name];
  if (!m) m = loadModel(name);
  return m;
}

ScenePtr Resolver::builtinScene(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& s = scenes_[name];
  if (!s) s = loadScene(name);
  return s;
}

ModelPtr Resolver::model(const v1::ModelRef& ref, const std::string& field) {
  switch (ref.source_case()) {
    case v1::ModelRef::kName:
      if (!contains(builtinModelNames(), ref.name()))
        throw RequestError(RequestError::Code::NotFound, field + ".name: no built-in model '" +
                                                             ref.name() + "' (" +
                                                             joinNames(builtinModelNames()) + ")");
      return builtinModel(ref.name());
    case v1::ModelRef::kYaml: {
      ModelPtr model;
      try {
        model = loadModelString(ref.yaml(), field + ".yaml");
      } catch (const std::exception& e) {
        throw RequestError(RequestError::Code::InvalidArgument, e.what());
      }
      for (const Geometry& g : model->geometry)
        if (g.shape.type == ShapeType::Mesh)
          throw RequestError(RequestError::Code::InvalidArgument,
                             field + ".yaml: geometry '" + g.name +
                                 "': an inline model cannot use mesh files; use primitive shapes");
      return model;
    }
    case v1::ModelRef::SOURCE_NOT_SET: break;
  }
  throw RequestError(RequestError::Code::InvalidArgument,
                     field + ": not set (give a built-in name or the YAML text)");
}

CollisionModelPtr Resolver::collision(const ModelPtr& model, const v1::ModelRef& model_ref,
                                      const v1::SceneRef& ref, const std::string& field,
                                      const CollisionOptions& options) {
  ScenePtr scene;
  switch (ref.source_case()) {
    case v1::SceneRef::kName:
      if (!contains(builtinSceneNames(), ref.name()))
        throw RequestError(RequestError::Code::NotFound, field + ".name: no built-in scene '" +
                                                             ref.name() + "' (" +
                                                             joinNames(builtinSceneNames()) + ")");
      scene = builtinScene(ref.name());
      break;
    case v1::SceneRef::kYaml:
      try {
        scene = loadSceneStringBuiltinMeshes(ref.yaml(), field + ".yaml");
      } catch (const std::exception& e) {
        throw RequestError(RequestError::Code::InvalidArgument, e.what());
      }
      break;
    case v1::SceneRef::SOURCE_NOT_SET: scene = builtinScene("empty"); break;
  }
  const bool builtin_pair =
      model_ref.source_case() == v1::ModelRef::kName && ref.source_case() != v1::SceneRef::kYaml;
  // (Only the options' touch_contact_surfaces varies between requests.)
  if (!builtin_pair) return std::make_shared<CollisionModel>(model, scene, options);
  const std::string key =
      model->name + "|" + scene->name + (options.touch_contact_surfaces ? "|touching" : "");
  std::lock_guard<std::mutex> lock(mutex_);
  auto& c = collisions_[key];
  if (!c) c = std::make_shared<CollisionModel>(model, scene, options);
  return c;
}

}  // namespace marionette::service
