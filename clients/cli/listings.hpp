// SPDX-License-Identifier: BSD-3-Clause
// `marionette models` and `marionette scenes`: what they list, whether the models and scenes
// are this program's or a server's, printed by one printer (a line each, or --json).
#pragma once

#include <Eigen/Core>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace marionette::cli {

struct ModelListing {
  std::string name, description;
  std::vector<std::string> dynamic, kinematic, strings, points;
};

struct SceneListing {
  std::string name, description;
  std::vector<std::string> obstacles;
  long long triangles = 0;
  std::optional<std::pair<Eigen::Vector3d, Eigen::Vector3d>> bounds_m;  // min, max
};

void printModels(const std::vector<ModelListing>& models, bool json, std::ostream& os);
void printScenes(const std::vector<SceneListing>& scenes, bool json, std::ostream& os);

}  // namespace marionette::cli
