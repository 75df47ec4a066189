// SPDX-License-Identifier: BSD-3-Clause
// Scene YAML, as an inline scene of a request (built-in meshes only): parsed, its collision
// geometry built for planar-arm, and one state checked against it (huge coordinates crashed FCL).
#include "fuzz_target.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/models/model_io.hpp"

void fuzzOne(const std::string& input) {
  static const marionette::ModelPtr model = marionette::loadModel("planar-arm");
  static const Eigen::VectorXd q = [] {
    Eigen::VectorXd out(4);
    out << 0.3, -0.6, 0.3, 0.45;
    return out;
  }();
  const marionette::ScenePtr scene = marionette::loadSceneStringBuiltinMeshes(input, "fuzz.yaml");
  marionette::CollisionChecker checker(std::make_shared<marionette::CollisionModel>(model, scene));
  checker.checkState(q);
}

MARIONETTE_FUZZ_ENTRY
