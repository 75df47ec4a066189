// SPDX-License-Identifier: BSD-3-Clause
// Collision benchmark: full-state checks (links + strings + self) and clearance queries per
// second for a puppet in the built-in stages, over the states of a real simulated motion (the
// rig swinging every input, by default 3x bench_integrators' amplitude: bars +-0.24 rad, rig
// points +-9 cm, winches +-6 cm), so the puppet swings near the obstacles as a planner's
// propagations would.  Also the time to build the CollisionModel (the meshes' BVHs) and a
// per-thread CollisionChecker.
//
//   build/bin/bench_collision [--models puppetcopter] [--scenes pillars,living-room]
//                             [--seconds S] [--amplitude X] [--repeats N]
// Per query: the median (and minimum) over N passes of the mean time over all states; a query
// includes the forward kinematics and posing of every link and string.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_motion.hpp"
#include "marionette/common/text.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/models/model_io.hpp"

using namespace marionette;

namespace {

// The configurations (n_q each) a simulated motion passes through.
Eigen::MatrixXd motionStates(const ModelPtr& model, double seconds, double amplitude) {
  const double dt = 0.01;
  SimulationOptions options;
  options.dt_s = dt;
  options.duration_s = seconds;
  const InputSchedule inputs = oscillatingInputs(*model, seconds, seconds, dt, amplitude);
  std::vector<Eigen::VectorXd> states;
  simulate(model, inputs, options, [&](const SimulationRow& row) {
    states.push_back(model->configuration(*row.q, *row.rho));
    return true;
  });
  Eigen::MatrixXd q(model->nq(), static_cast<Eigen::Index>(states.size()));
  for (size_t k = 0; k < states.size(); ++k) q.col(static_cast<Eigen::Index>(k)) = states[k];
  return q;
}

template <class Query>
std::pair<double, double> timePerQuery(const Eigen::MatrixXd& qs, int repeats, Query&& query) {
  std::vector<double> us;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (Eigen::Index k = 0; k < qs.cols(); ++k) query(qs.col(k));
    const auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() /
                 static_cast<double>(qs.cols()));
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.front()};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models{"puppetcopter"};
  std::vector<std::string> scenes{"pillars", "living-room"};
  double seconds = 20.0;
  int repeats = 5;
  double amplitude = 3.0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--models") && i + 1 < argc) {
      models = splitCommas(argv[++i]);
    } else if (!std::strcmp(argv[i], "--scenes") && i + 1 < argc) {
      scenes = splitCommas(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--amplitude") && i + 1 < argc) {
      amplitude = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--repeats") && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else {
      std::cerr << "usage: bench_collision [--models a,b] [--scenes a,b] [--seconds S] "
                   "[--amplitude X] [--repeats N]\n";
      return 2;
    }
  }
  std::printf("%-13s %-12s %9s %8s %10s %7s %10s %13s %9s %13s %11s %9s\n", "model", "scene",
              "triangles", "build_ms", "checker_ms", "states", "in_contact", "check_us(min)",
              "checks/s", "clear_us(min)", "clearance/s", "min_stage");
  for (const std::string& model_name : models) {
    const ModelPtr model = loadModel(model_name);
    const Eigen::MatrixXd qs = motionStates(model, seconds, amplitude);
    for (const std::string& scene_name : scenes) {
      const ScenePtr scene = loadScene(scene_name);
      const auto t0 = std::chrono::steady_clock::now();
      auto cm = std::make_shared<CollisionModel>(model, scene);  // builds the meshes' BVHs
      const auto t1 = std::chrono::steady_clock::now();
      CollisionChecker checker(cm);  // one per thread
      const auto t2 = std::chrono::steady_clock::now();
      int contacts = 0;
      double min_stage = 1e9;
      for (Eigen::Index k = 0; k < qs.cols(); ++k) {
        contacts += checker.inCollision(qs.col(k)).in_collision;
        min_stage = std::min(min_stage, checker.clearance(qs.col(k)).stage_distance_m);
      }
      const auto check = timePerQuery(qs, repeats, [&](const Eigen::VectorXd& q) {
        return checker.inCollision(q).in_collision;
      });
      const auto clear = timePerQuery(
          qs, repeats, [&](const Eigen::VectorXd& q) { return checker.clearance(q).distance_m; });
      std::printf(
          "%-13s %-12s %9zu %8.1f %10.3f %7ld %9.1f%% %6.2f(%5.2f) %9.0f %7.1f(%5.1f) %11.0f "
          "%9.4f\n",
          model_name.c_str(), scene_name.c_str(), scene->triangleCount(),
          std::chrono::duration<double, std::milli>(t1 - t0).count(),
          std::chrono::duration<double, std::milli>(t2 - t1).count(), static_cast<long>(qs.cols()),
          100.0 * contacts / static_cast<double>(qs.cols()), check.first, check.second,
          1e6 / check.first, clear.first, clear.second, 1e6 / clear.first, min_stage);
      std::fflush(stdout);
    }
  }
  return 0;
}
