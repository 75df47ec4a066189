// SPDX-License-Identifier: BSD-3-Clause
// Roadmap files, read for the collision model and options they were written for (the seed's):
// most mutations keep the fingerprint and reach the vertices and edges.
#include <sstream>

#include "fuzz_target.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/search/roadmap.hpp"

void fuzzOne(const std::string& input) {
  static const auto collision = std::make_shared<marionette::CollisionModel>(
      marionette::loadModel("planar-arm"), marionette::loadScene("empty"));
  marionette::RoadmapOptions options;
  options.vertices = 4;
  std::istringstream in(input);
  try {
    marionette::RestPoseRoadmap::read(in, "fuzz.roadmap", collision, options);
  } catch (const marionette::RoadmapFileError&) {
  }
}

MARIONETTE_FUZZ_ENTRY
