// SPDX-License-Identifier: BSD-3-Clause
// The warm start around the folds (trajopt/src/rest_pose_path.hpp): what the search returns is
// checked independently: the rest poses along every straight move between its waypoints,
// followed by quasiStaticPath at a finer step than the search's, never jump and keep the margins
// by the collision checker, and the last one meets the goal.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <tuple>

#include "marionette/environments/scene.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "quasi_static.hpp"
#include "rest_pose_path.hpp"

namespace marionette::detail {
namespace {

struct Fixture {
  ModelPtr model;
  CollisionModelPtr collision;
  RestVertex start;
};

Fixture fixture(const std::string& model_name, const std::string& scene) {
  Fixture f;
  f.model = loadModel(model_name);
  f.collision = std::make_shared<CollisionModel>(f.model, loadScene(scene));
  Eigen::VectorXd rho(f.model->nk());
  for (int j = 0; j < f.model->nk(); ++j) rho[j] = f.model->kinematic[j].default_value;
  const RestPose rest = computeRestPose(f.model, rho);
  EXPECT_TRUE(rest.ok) << rest.message;
  f.start = {rho, rest.q};
  return f;
}

// Every straight move of `path`, in steps a quarter of the search's, continued from the pose
// before: no jump, every rest pose as clear as the setup asks.
void expectContinuousAndClear(const Fixture& f, const RestPosePathSetup& setup,
                              const RestPosePath& path) {
  CollisionChecker checker(f.collision);
  Eigen::VectorXd q = path.poses.front();
  for (std::size_t w = 0; w + 1 < path.inputs.size(); ++w) {
    const Eigen::VectorXd& a = path.inputs[w];
    const Eigen::VectorXd& b = path.inputs[w + 1];
    constexpr int kRows = 200;
    Eigen::MatrixXd rows(kRows + 1, a.size());
    for (int r = 0; r <= kRows; ++r) rows.row(r) = (a + (b - a) * r / double(kRows)).transpose();
    const QuasiStaticPath along = quasiStaticPath(f.model, rows, q, setup.max_step);
    ASSERT_TRUE(along.ok) << "waypoint " << w << ": " << along.message;
    Eigen::VectorXd q_full(f.model->nq());
    for (int r = 0; r <= kRows; ++r) {
      q_full << along.q.row(r).transpose(), rows.row(r).transpose();
      const StateCheck c = checker.checkState(q_full);
      EXPECT_FALSE(c.in_collision) << "waypoint " << w << ", row " << r;
      // (The search checks its own sub-steps; between them, a fraction of a millimetre less.)
      EXPECT_GT(c.stage_clearance_m, setup.stage_margin_m - 1e-3) << "waypoint " << w;
      EXPECT_GT(c.clearance_m, setup.margin_m - 1e-3) << "waypoint " << w;
    }
    q = along.q.row(kRows).transpose();
    EXPECT_LT((q - path.poses[w + 1]).cwiseAbs().maxCoeff(), setup.max_step) << "waypoint " << w;
  }
}

// Goals where a rest pose of seeded random inputs holds the point, clear with margin; each path
// the search returns is checked independently, and the same request gives the same path.
TEST(RestPosePath, EveryPathFoundIsContinuousClearAndEndsAtTheGoal) {
  int around_anywhere = 0;  // paths of more than the transfer (the planar arm's: 3 of 6)
  for (const auto& [model_name, scene, point] :
       {std::tuple<const char*, const char*, const char*>{"arm3d", "pillars", "elbow"},
        {"planar-arm", "window", "tip"}}) {
    SCOPED_TRACE(model_name);
    const Fixture f = fixture(model_name, scene);
    const Model& m = *f.model;
    CollisionChecker checker(f.collision);
    DynamicsData data(m);
    std::mt19937_64 rng(7);
    RestPosePathSetup setup;
    setup.collision = f.collision;
    setup.max_rest_poses = 4000;
    int found = 0, around = 0;
    for (int draw = 0; draw < 8; ++draw) {
      Eigen::VectorXd rho(m.nk());
      for (int j = 0; j < m.nk(); ++j) {
        const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
        rho[j] = m.kinematic[j].lower + (m.kinematic[j].upper - m.kinematic[j].lower) * u;
      }
      const RestPose rest = computeRestPose(f.model, rho);
      if (!rest.ok) continue;
      Eigen::VectorXd q_full(m.nq());
      q_full << rest.q, rho;
      const StateCheck c = checker.checkState(q_full);
      if (c.in_collision || c.stage_clearance_m < 0.03 || c.clearance_m < 0.01) continue;
      const int p = m.pointIndex(point);
      forwardKinematics(m, data, q_full);
      const Eigen::Vector3d at = m.stage_pose * pointPosition(data, m.points[p].frame,
                                                              m.points[p].position_m);
      char spec[160];
      std::snprintf(spec, sizeof spec, "point:%s=%.17g,%.17g,%.17g;radius=0.04", point, at.x(),
                    at.y(), at.z());
      GoalEvaluator goal(f.model, GoalSpec::parse(spec));
      const double aim = 0.5 * goal.tolerance();
      const RestPosePath path = searchRestPosePath(setup, f.start, rho, goal, aim);
      EXPECT_LE(path.rest_poses, 2 * setup.max_rest_poses + 200);
      if (path.inputs.empty()) continue;
      ++found;
      around += path.inputs.size() > 2;
      EXPECT_EQ(path.inputs.front(), f.start.rho);
      EXPECT_LE(goal.poseError(path.poses.back(), path.inputs.back()), aim);
      expectContinuousAndClear(f, setup, path);
      // The same request, the same path: the budget is counted, the draws seeded.
      const RestPosePath again = searchRestPosePath(setup, f.start, rho, goal, aim);
      ASSERT_EQ(again.inputs.size(), path.inputs.size());
      for (std::size_t w = 0; w < path.inputs.size(); ++w)
        EXPECT_EQ(again.inputs[w], path.inputs[w]);
    }
    std::printf("%s: %d paths found, %d around a fold or the stage\n", model_name, found, around);
    EXPECT_GT(found, 0);
    around_anywhere += around;
  }
  EXPECT_GT(around_anywhere, 0);
}

}  // namespace
}  // namespace marionette::detail
