// SPDX-License-Identifier: BSD-3-Clause
// Requests nobody tuned for: with a fixed seed, for each puppet and stage of the list, goals of a
// named point drawn where the point is at the rest pose of random rig inputs (uniform in their
// box) that is clear of the stage by 3 cm and of everything by 1 cm, so each goal is reachable
// at rest with margin; each with a radius, a planner and a search seed, also drawn.  One JSON
// object a line on stdout; benchmarks/random_requests.py plans and judges them
// (docs/benchmarks.md, requests nobody tuned for).
//
//   draw_requests [--seed 1] [--per-stage 6] [--only puppetcopter]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/problem/motion_problem.hpp"

namespace {

using namespace marionette;

struct Stage {
  std::string model, scene;
  std::vector<std::string> points;  // the goal's point is one of these
  double budget_s;                  // the stage-worthy judge's budget for the whole process
};

// The puppets and the stages they are planned on, their end effectors as the goals' points.
const std::vector<Stage>& stages() {
  static const std::vector<std::string> pc = {"hand_l", "hand_r", "head_top", "foot_l", "foot_r"};
  static const std::vector<std::string> m25 = {"hand_l", "hand_r", "nose", "foot_l", "foot_r"};
  static const std::vector<Stage> all = {
      {"planar-arm", "empty", {"tip", "elbow"}, 15},
      {"planar-arm", "window", {"tip", "elbow"}, 15},
      {"suspended-mass", "empty", {"mass"}, 15},
      {"suspended-mass", "window", {"mass"}, 15},
      {"arm3d", "empty", {"hand", "elbow"}, 15},
      {"arm3d", "pillars", {"hand", "elbow"}, 15},
      {"puppetcopter", "table", pc, 15},
      {"puppetcopter", "living-room", pc, 15},
      {"marionette25", "table", m25, 45},
      {"marionette25", "empty", m25, 45},
  };
  return all;
}

const char* const kPlanners[] = {"est", "rrt", "kpiece", "sst", "pdst", "prm"};
constexpr double kStageMargin_m = 0.03, kAnythingMargin_m = 0.01;
constexpr int kMaxDraws = 20000;

// Uniform in [0, 1) from the generator's raw 64 bits: the same numbers with every standard
// library (std::uniform_real_distribution's algorithm is the implementation's choice).
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// FNV-1a: a stage's name as its stream's seed, the same with every standard library.
std::uint32_t fnv1a(const std::string& text) {
  std::uint32_t h = 2166136261u;
  for (const unsigned char c : text) h = (h ^ c) * 16777619u;
  return h;
}

std::string roundedToMillimetre(double v_m) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v_m);
  return buf;
}

void drawStage(const Stage& s, int count, std::mt19937_64& rng) {
  MotionProblem problem;
  problem.model = loadModel(s.model);
  problem.scene = loadScene(s.scene);
  const Model& m = *problem.model;
  const CollisionModelPtr collision = collisionModelOf(problem);
  CollisionChecker checker(collision);
  const RestPoseOptions standing = standingOn(collision->contacts());
  const RestPose start = computeRestPose(problem.model, m.defaultInputs(), nullptr, standing);
  if (!start.ok) throw std::runtime_error(s.model + ": no rest pose at the default inputs");
  DynamicsData data(m);
  auto stagePoint = [&](int p, const Eigen::VectorXd& q) {
    forwardKinematics(m, data, q);
    return Eigen::Vector3d(m.stage_pose *
                           pointPosition(data, m.points[p].frame, m.points[p].position_m));
  };
  const Eigen::VectorXd q_start = m.configuration(start.q, m.defaultInputs());
  for (int drawn = 0, draws = 0; drawn < count;) {
    const std::string& name = s.points[static_cast<std::size_t>(uniform(rng) * s.points.size())];
    const double radius_m = 0.03 + 0.02 * uniform(rng);
    const char* planner = kPlanners[static_cast<int>(uniform(rng) * std::size(kPlanners))];
    const int seed = 1 + static_cast<int>(uniform(rng) * 1000);
    const int p = m.pointIndex(name);
    // Inputs until one's rest pose is clear with margin and puts the point two radii or more
    // from where it hangs at the start (a goal that asks for a motion).
    for (;;) {
      if (++draws > kMaxDraws)
        throw std::runtime_error(s.model + " on " + s.scene + ": no clear rest pose in " +
                                 std::to_string(kMaxDraws) + " draws");
      Eigen::VectorXd rho(m.nk());
      for (int j = 0; j < m.nk(); ++j) {
        const KinematicVariable& v = m.kinematic[j];
        rho[j] = v.lower + (v.upper - v.lower) * uniform(rng);
      }
      const RestPose pose = computeRestPose(problem.model, rho, &start.q, standing);
      if (!pose.ok) continue;
      const Eigen::VectorXd q = m.configuration(pose.q, rho);
      const StateCheck check = checker.checkState(q);
      if (check.in_collision || check.stage_clearance_m < kStageMargin_m ||
          check.clearance_m < kAnythingMargin_m)
        continue;
      const Eigen::Vector3d goal = stagePoint(p, q);
      const double moved_m = (goal - stagePoint(p, q_start)).norm();
      if (moved_m < 2 * radius_m) continue;
      std::printf(
          "{\"model\": \"%s\", \"scene\": \"%s\", \"goal\": \"point:%s=%s,%s,%s;radius=%s\", "
          "\"planner\": \"%s\", \"seed\": %d, \"budget_s\": %g, \"moved_m\": %.3f, "
          "\"draws\": %d}\n",
          s.model.c_str(), s.scene.c_str(), name.c_str(), roundedToMillimetre(goal.x()).c_str(),
          roundedToMillimetre(goal.y()).c_str(), roundedToMillimetre(goal.z()).c_str(),
          roundedToMillimetre(radius_m).c_str(), planner, seed, s.budget_s, moved_m, draws);
      std::fflush(stdout);
      ++drawn;
      draws = 0;
      break;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  unsigned long seed = 1;
  int per_stage = 6;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--seed") && has_value) {
      seed = std::strtoul(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--per-stage") && has_value) {
      per_stage = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--only") && has_value) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: draw_requests [--seed 1] [--per-stage 6] [--only MODEL]\n");
      return 2;
    }
  }
  if (per_stage < 1) {
    std::fprintf(stderr, "draw_requests: --per-stage must be at least 1\n");
    return 2;
  }
  try {
    for (const Stage& s : stages()) {
      // Each stage its own stream, so that --only and the list's order do not change its draws.
      std::seed_seq seq{static_cast<std::uint32_t>(seed), fnv1a(s.model + "/" + s.scene)};
      std::mt19937_64 rng(seq);
      if (only.empty() || s.model == only) drawStage(s, per_stage, rng);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "draw_requests: %s\n", e.what());
    return 1;
  }
  return 0;
}
