// SPDX-License-Identifier: BSD-3-Clause
// The server's resolver: a request's ModelRef and SceneRef into library objects.  Built-in
// models and scenes, and the collision models of built-in pairs, are loaded once and kept; an
// inline model or scene is parsed per request and may not name files (a request never makes
// the server read its own disk).
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/model.hpp"
#include "marionette/v1/planner.pb.h"

namespace marionette::service {

class Resolver {
 public:
  // RequestError (wire.hpp) naming `field` for an unknown name, bad YAML, or an inline mesh.
  ModelPtr model(const v1::ModelRef& ref, const std::string& field);
  CollisionModelPtr collision(const ModelPtr& model, const v1::ModelRef& model_ref,
                              const v1::SceneRef& scene_ref, const std::string& field,
                              const CollisionOptions& options = {});
  ModelPtr builtinModel(const std::string& name);
  ScenePtr builtinScene(const std::string& name);

 private:
  std::mutex mutex_;
  std::map<std::string, ModelPtr> models_;
  std::map<std::string, ScenePtr> scenes_;
  std::map<std::string, CollisionModelPtr> collisions_;
};

}  // namespace marionette::service
