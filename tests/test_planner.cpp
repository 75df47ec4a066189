// SPDX-License-Identifier: BSD-3-Clause
// Planning: the benchmark problems, each plan re-simulated independently of the
// planner from its CSV and checked for collisions, the goal, and the rig's limits; plus the
// pieces (rig trajectories, goals, roadmap files, reproducibility, bad requests).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "marionette/environments/collision.hpp"
#include "marionette/models/input_limits.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/plan/plan_file.hpp"
#include "marionette/planner/pipeline.hpp"
#include "marionette/planner/planner.hpp"
#include "support/test_paths.hpp"

using namespace marionette;

namespace {

// What an independent re-simulation of a plan's CSV found.
struct Replay {
  int rows = 0;
  int collisions = 0;
  std::string first_contact;
  double best_goal_error = INFINITY;  // over rows (m or rad, as the goal measures)
  double final_goal_error = INFINITY;
  double final_kinetic_J = INFINITY;
  double max_range_excess = 0.0, max_speed_ratio = 0.0, max_accel_ratio = 0.0;
};

// Re-simulates `csv` with the VI at the plan's rate from the rest pose of its first row, checks
// every row against the scene, and measures the goal with `error(q_full)`.
template <class GoalError>
Replay replay(const ModelPtr& model, const ScenePtr& scene, const std::string& csv, double rate,
              GoalError error) {
  Replay r;
  const InputSchedule inputs = InputSchedule::fromCsv(*model, csv, "plan.csv");
  // Limits by finite differences of the samples, the rig at rest before and after.
  const int n = static_cast<int>(inputs.times_s.size());
  const double h = 1.0 / rate;
  for (int j = 0; j < model->nk(); ++j) {
    const KinematicVariable& kv = model->kinematic[j];
    auto x = [&](int i) { return inputs.values(std::clamp(i, 0, n - 1), j); };
    for (int i = 0; i < n; ++i) {
      r.max_range_excess = std::max({r.max_range_excess, kv.lower - x(i), x(i) - kv.upper});
      r.max_speed_ratio = std::max(r.max_speed_ratio, std::abs(x(i + 1) - x(i)) / h / kv.max_speed);
      r.max_accel_ratio = std::max(
          r.max_accel_ratio, std::abs(x(i + 1) - 2 * x(i) + x(i - 1)) / (h * h) / kv.max_accel);
    }
  }
  SimulationOptions so;
  so.dt_s = h;
  so.duration_s = inputs.times_s.back();
  CollisionChecker checker(std::make_shared<CollisionModel>(model, scene));
  DynamicsData data(*model);
  Eigen::VectorXd q_prev;
  simulate(model, inputs, so, [&](const SimulationRow& row) {
    const Eigen::VectorXd q = model->configuration(*row.q, *row.rho);
    const CollisionResult c = checker.inCollision(q);
    if (c.in_collision && r.collisions++ == 0) r.first_contact = c.pair.describe();
    const double e = error(q);
    r.best_goal_error = std::min(r.best_goal_error, e);
    r.final_goal_error = e;
    if (r.rows > 0) {
      const Eigen::VectorXd v = (*row.q - q_prev) * rate;
      forwardKinematics(*model, data, q);
      computeLagrangian(*model, data, q, Eigen::VectorXd::Zero(model->nd()),
                        LagrangianOrder::MassMatrix);
      r.final_kinetic_J = 0.5 * v.dot(data.M * v);
    }
    q_prev = *row.q;
    ++r.rows;
    return true;
  });
  return r;
}

// Distance (m) of a named point from a stage position.
auto pointError(const ModelPtr& model, const std::string& point, Eigen::Vector3d target_stage) {
  return [model, idx = model->pointIndex(point), target_stage,
          data = std::make_shared<DynamicsData>(*model)](const Eigen::VectorXd& q) {
    forwardKinematics(*model, *data, q);
    const Point& p = model->points[idx];
    return (model->stage_pose * pointPosition(*data, p.frame, p.position_m) - target_stage).norm();
  };
}

std::string csvOf(const Plan& plan) {
  std::ostringstream os;
  writeInputsCsv(plan, os);
  return os.str();
}

void expectClean(const Replay& r, const Plan& plan) {
  EXPECT_EQ(r.rows, plan.samples());
  EXPECT_EQ(r.collisions, 0) << "first contact: " << r.first_contact;
  EXPECT_LE(r.max_range_excess, 1e-9);
  EXPECT_LE(r.max_speed_ratio, 1.0 + 1e-6);
  EXPECT_LE(r.max_accel_ratio, 1.0 + 1e-6);
  EXPECT_TRUE(plan.limit_violations.empty());
  EXPECT_TRUE(plan.collision_free);
}

PlanRequest request(const std::string& model, const std::string& scene, const std::string& planner,
                    const std::string& goal, double time_limit = 600.0, unsigned long seed = 1) {
  PlanRequest req;
  req.model = loadModel(model);
  req.scene = loadScene(scene);
  req.goal = GoalSpec::parse(goal);
  req.options.planner = planner;
  req.options.time_limit_s = time_limit;
  // Tree searches are budgeted in integrator steps, not seconds: a test's plan is the same on a
  // loaded machine or under a sanitizer.  The budget is 4x what the hardest of them takes
  // (arm3d behind the pillars, est: ~0.42 M); the time limit is only a backstop that no search
  // here reaches on a working build (a run it ended would fail its test, not pass it).
  req.options.max_propagations = 4'000'000;
  req.options.seed = seed;
  // No roadmap cache: a prm request builds its own roadmap, so no test depends on what another
  // one's queries found.  The tests of the cache give requests their own.
  return req;
}

// Plans `point` of `model` to within `radius` of `target` in `scene` (seed 1), and checks
// the plan by an independent re-simulation of its CSV: clean, and the point gets there.
void expectPointReached(const std::string& model_name, const std::string& scene,
                        const std::string& planner, const std::string& point,
                        const Eigen::Vector3d& target, double radius) {
  const ModelPtr model = loadModel(model_name);
  std::ostringstream goal;
  goal << "point:" << point << '=' << target.x() << ',' << target.y() << ',' << target.z()
       << ";radius=" << radius;
  const PlanRequest req = request(model_name, scene, planner, goal.str(), 600.0, 1);
  const Plan plan = planMotion(req);
  ASSERT_EQ(plan.outcome, PlanOutcome::Exact) << plan.message;
  // The search's own measure met the goal (it stops at its first exact solution).
  EXPECT_LE(plan.stats.best_goal_distance, radius);
  const Replay r =
      replay(model, req.scene, csvOf(plan), plan.rate_hz, pointError(model, point, target));
  expectClean(r, plan);
  EXPECT_LE(r.best_goal_error, radius);
}

double restValue(const ModelPtr& model, const std::string& variable) {
  const RestPose rest = computeRestPose(model, model->defaultInputs());
  return rest.q[model->variableIndex(variable)];
}

}  // namespace

// ---- Pieces ------------------------------------------------------------------------------------

TEST(RigTrajectory, MovesEndExactlyAtTheTargetWithinTheLimitsAtAnyRate) {
  const ModelPtr model = loadModel("puppetcopter");
  RigTrajectory t(0.02, model->defaultInputs());
  Eigen::VectorXd target = model->defaultInputs();
  target[0] = 0.2;  // yaw: 1.2 rad
  target[2] = 1.1;  // winch: 0.42 m
  appendMove(*model, t, target, 1.0);
  appendHold(t, 0.1);
  EXPECT_LT((t.lastPosition() - target).cwiseAbs().maxCoeff(), 1e-15);
  // The quintic's time: the winch at 0.3 m/s needs 15/8 * 0.42 / 0.3 = 2.625 s.
  EXPECT_NEAR(t.duration_s(), 2.64 + 0.1, 0.021);
  for (double rate : {50.0, 30.0, 200.0, 37.0}) {
    const Eigen::MatrixXd s = t.resample(rate);
    EXPECT_TRUE(checkInputLimits(*model, s, rate).empty()) << rate << " Hz";
  }
  // A braking tail stops a moving rig at max_accel.
  RigTrajectory b(0.02, model->defaultInputs());
  Eigen::VectorXd rho = model->defaultInputs(), v = Eigen::VectorXd::Zero(model->nk()),
                  cmd = Eigen::VectorXd::Zero(model->nk());
  cmd[2] = 10.0;  // clamped to 0.3 m/s
  for (int k = 0; k < 20; ++k) {
    rigStep(*model, rho.data(), v.data(), cmd.data(), 0.02, rho.data(), v.data());
    b.append(rho, v);
  }
  EXPECT_DOUBLE_EQ(v[2], 0.3);
  appendBrake(*model, b);
  EXPECT_EQ(b.lastVelocity().cwiseAbs().maxCoeff(), 0.0);
  EXPECT_TRUE(checkInputLimits(*model, b.resample(50.0), 50.0).empty());
  // ...and a step of the winch is caught, naming it.
  Eigen::MatrixXd jump = b.resample(50.0);
  jump(5, 2) += 0.05;
  const auto v2 = checkInputLimits(*model, jump, 50.0);
  ASSERT_FALSE(v2.empty());
  EXPECT_EQ(v2[0].variable, "act_arm_l_len");
}

TEST(Goal, ParsesEveryKindAndRejectsBadText) {
  const GoalSpec q = GoalSpec::parse("q:theta1=0.3,theta2=-0.1;tol=0.02;at-rest");
  EXPECT_EQ(q.kind, GoalSpec::Kind::Joint);
  EXPECT_EQ(q.values.size(), 2u);
  EXPECT_DOUBLE_EQ(q.tolerance, 0.02);
  EXPECT_TRUE(q.at_rest);
  const GoalSpec p = GoalSpec::parse("point:hand_l=0.05,0.24,0.40;radius=0.04");
  EXPECT_EQ(p.kind, GoalSpec::Kind::Point);
  EXPECT_DOUBLE_EQ(p.points[0].position_m.y(), 0.24);
  EXPECT_EQ(GoalSpec::parse(p.describe()).describe(), p.describe());
  EXPECT_EQ(GoalSpec::parse("rest-of:xr=0.7,r=0.3").kind, GoalSpec::Kind::RestOf);
  for (const char* bad : {"q:", "q:theta1", "point:hand=1,2", "pose:x=1", "q:theta1=0.3;tol=-1",
                          "q:theta1=abc", "point:hand=1,2,3;tol=0.1", "rest-of:xr=0.1;at-rest=1"})
    EXPECT_THROW(GoalSpec::parse(bad), std::invalid_argument) << bad;
  const ModelPtr arm = loadModel("planar-arm");
  EXPECT_THROW(GoalEvaluator(arm, GoalSpec::parse("q:nope=1")), std::invalid_argument);
  EXPECT_THROW(GoalEvaluator(arm, GoalSpec::parse("point:nope=0,0,0")), std::invalid_argument);
  EXPECT_THROW(GoalEvaluator(arm, GoalSpec::parse("rest-of:x=5")), std::invalid_argument);
}

// The residual vector that least squares works on and the scalar error agree: per-target
// distances for point goals (max of the 3-blocks' norms), per-variable differences otherwise.
TEST(Goal, PoseResidualIsTheErrorAsAVector) {
  const ModelPtr m = loadModel("puppetcopter");
  const Eigen::VectorXd rho = m->defaultInputs();
  const RestPose rest = computeRestPose(m, rho);
  ASSERT_TRUE(rest.ok);
  DynamicsData d(*m);
  const Eigen::VectorXd qf = m->configuration(rest.q, rho);
  const Eigen::Vector3d hand = pointInStage(*m, d, qf, m->pointIndex("hand_l"));
  GoalSpec spec = GoalSpec::parse("point:hand_l=0,0,0");
  spec.points[0].position_m = hand + Eigen::Vector3d(0.03, 0.0, -0.04);
  spec.merge(GoalSpec::parse("point:hand_r=0,0,0"));
  spec.points[1].position_m = pointInStage(*m, d, qf, m->pointIndex("hand_r"));
  GoalEvaluator point(m, spec);
  const Eigen::VectorXd r = point.poseResidual(rest.q, rho);
  ASSERT_EQ(r.size(), 6);
  EXPECT_NEAR(r.head<3>().norm(), 0.05, 1e-12);
  EXPECT_NEAR(r.tail<3>().norm(), 0.0, 1e-12);
  EXPECT_NEAR(point.poseError(rest.q, rho), 0.05, 1e-12);

  GoalEvaluator joint(m, GoalSpec::parse("q:beta_head=0.3,alpha_head=-0.2"));
  const Eigen::VectorXd rj = joint.poseResidual(rest.q, rho);
  ASSERT_EQ(rj.size(), 2);
  EXPECT_DOUBLE_EQ(joint.poseError(rest.q, rho), rj.cwiseAbs().maxCoeff());
  const double d_beta = rest.q[m->variableIndex("beta_head")] - 0.3,
               d_alpha = rest.q[m->variableIndex("alpha_head")] + 0.2;
  EXPECT_TRUE((rj[0] == d_beta && rj[1] == d_alpha) || (rj[0] == d_alpha && rj[1] == d_beta));
}

TEST(Goal, KineticEnergyFromMomentumIsZeroAtRestAndMatchesVelocity) {
  const ModelPtr model = loadModel("arm3d");
  const RestPose rest = computeRestPose(model, model->defaultInputs());
  VariationalIntegrator vi(model);
  GoalEvaluator eval(model, GoalSpec::parse("q:elbow=1.0;at-rest"));
  const State x = vi.stateFromVelocity(rest.q, Eigen::VectorXd::Zero(4), model->defaultInputs());
  EXPECT_LT(eval.kineticEnergyFromMomentum(x.q, x.rho, x.p, vi.dt()), 1e-20);
  Eigen::VectorXd v(4);
  v << 0.3, -0.2, 0.1, 0.5;
  const State y = vi.stateFromVelocity(rest.q, v, model->defaultInputs());
  const double expected = eval.kineticEnergy(rest.q, model->defaultInputs(), v);
  EXPECT_NEAR(eval.kineticEnergyFromMomentum(y.q, y.rho, y.p, vi.dt()), expected, 1e-3 * expected);
}

// ---- The required problems ---------------------------------------------------------------------

class PlanarArmEveryPlanner : public ::testing::TestWithParam<std::string> {};

TEST_P(PlanarArmEveryPlanner, SwingsTheArm03RadFromRest) {
  const ModelPtr model = loadModel("planar-arm");
  const double target = restValue(model, "theta1") + 0.3;
  PlanRequest req = request("planar-arm", "empty", GetParam(),
                            "q:theta1=" + std::to_string(target) + ";tol=0.05");
  const Plan plan = planMotion(req);
  ASSERT_EQ(plan.outcome, PlanOutcome::Exact) << plan.message;
  const int i = model->variableIndex("theta1");
  const Replay r = replay(
      model, req.scene, csvOf(plan), plan.rate_hz,
      [&](const Eigen::VectorXd& q) { return std::abs(std::remainder(q[i] - target, 2 * M_PI)); });
  expectClean(r, plan);
  EXPECT_LE(r.best_goal_error, 0.05);
  // The plan's own predicted states are that re-simulation's.
  EXPECT_NEAR(plan.states(plan.goal_sample, i), target, 0.05 + 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Planners, PlanarArmEveryPlanner,
                         ::testing::Values("est", "kpiece", "rrt", "sst", "pdst", "prm"));

class Arm3dPillars : public ::testing::TestWithParam<std::string> {};

// The hand behind the front row of pillars (x = 0.30, gaps of 0.17 m between them), between
// pillar_front_2 and pillar_front_3: at rest it hangs at (0.23, 0, 0.50), and no rest pose puts it
// past x = 0.27, so the arm must be swung through the gap and caught there.
TEST_P(Arm3dPillars, ReachesAHandTargetBehindThePillars) {
  expectPointReached("arm3d", "pillars", GetParam(), "hand", Eigen::Vector3d(0.42, 0.0, 0.50),
                     0.05);
}

INSTANTIATE_TEST_SUITE_P(Planners, Arm3dPillars, ::testing::Values("est", "kpiece"));

TEST(SuspendedMassWindow, CarriesTheMassThroughTheWindowAndLetsItSettle) {
  const ModelPtr model = loadModel("suspended-mass");
  PlanRequest req = request("suspended-mass", "window", "prm", "rest-of:xr=0.7,r=0.3;at-rest");
  const Plan plan = planMotion(req);
  ASSERT_EQ(plan.outcome, PlanOutcome::Exact) << plan.message;
  const int xm = model->variableIndex("xm"), zm = model->variableIndex("zm");
  const Replay r =
      replay(model, req.scene, csvOf(plan), plan.rate_hz, [&](const Eigen::VectorXd& q) {
        return std::max(std::abs(q[xm] - 0.7), std::abs(q[zm] - 0.7));
      });
  expectClean(r, plan);
  // It ends on the far side of the wall (x = 0.35), at the rest pose, still.
  EXPECT_LE(r.final_goal_error, 0.05);
  EXPECT_LE(r.final_kinetic_J, 2e-3);
  EXPECT_GT(plan.states(0, xm), -0.1);
  EXPECT_LT(plan.states(0, xm), 0.35);
}

class PuppetcopterTable : public ::testing::TestWithParam<std::string> {};

// Left hand over the table's near edge (the top spans y 0.18..0.54 at z = 0.32), from hanging
// below the top at y = 0.11.
TEST_P(PuppetcopterTable, RaisesTheLeftHandOverTheTableEdge) {
  expectPointReached("puppetcopter", "table", GetParam(), "hand_l",
                     Eigen::Vector3d(0.05, 0.24, 0.40), 0.04);
}

INSTANTIATE_TEST_SUITE_P(Planners, PuppetcopterTable, ::testing::Values("prm", "est"));

// ---- Reproducibility, roadmap files, bad requests ----------------------------------------------

TEST(Plans, TheSameSeedGivesTheSamePlan) {
  const ModelPtr model = loadModel("planar-arm");
  const std::string goal = "q:theta1=" + std::to_string(restValue(model, "theta1") + 0.4);
  for (const char* planner : {"est", "kpiece", "rrt", "sst", "pdst", "prm"}) {
    PlanRequest req = request("planar-arm", "empty", planner, goal, 600.0, 3);
    const Plan a = planMotion(req), b = planMotion(req);
    ASSERT_EQ(a.samples(), b.samples()) << planner;
    EXPECT_EQ((a.inputs - b.inputs).cwiseAbs().maxCoeff(), 0.0) << planner;
    // prm: the roadmap has its own seed (options.roadmap.seed); the query's seed matters only
    // where it searches for a goal vertex at random, which this goal does not need.
    if (std::string(planner) == "prm") continue;
    req.options.seed = 4;
    const Plan c = planMotion(req);
    EXPECT_TRUE(c.samples() != a.samples() || (c.inputs - a.inputs).cwiseAbs().maxCoeff() > 0)
        << planner << ": another seed gave the same plan";
  }
}

TEST(Roadmap, SavedAndLoadedRoadmapsAnswerTheSameAndRefuseAnotherScene) {
  const std::string path = test::scratchDir("planner") + "/arm.roadmap";
  std::remove(path.c_str());
  const ModelPtr model = loadModel("planar-arm");
  const std::string goal = "q:theta1=" + std::to_string(restValue(model, "theta1") + 0.3);
  PlanRequest req = request("planar-arm", "empty", "prm", goal);
  req.options.roadmap.vertices = 60;
  RoadmapCacheOptions file;
  file.file = path;
  RoadmapCache first(file);
  req.roadmaps = &first;
  const Plan built = planMotion(req);
  ASSERT_TRUE(std::ifstream(path).good());
  RoadmapCache second(file);  // another process, say: the roadmap comes from the file
  req.roadmaps = &second;
  const Plan loaded = planMotion(req);
  EXPECT_EQ(loaded.stats.roadmap_build_time_s, 0.0);
  EXPECT_EQ(loaded.stats.roadmap_vertices, 60);
  ASSERT_EQ(built.samples(), loaded.samples());
  EXPECT_LT((built.inputs - loaded.inputs).cwiseAbs().maxCoeff(), 1e-12);
  // The same file for another scene: refused, naming the file.
  auto other = std::make_shared<CollisionModel>(model, loadScene("pillars"));
  RoadmapOptions options = req.options.roadmap;
  options.step_s = req.options.step_s;
  try {
    RestPoseRoadmap::load(path, other, options);
    FAIL() << "loaded a roadmap built for another scene";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  // A truncated file: an error naming the line.
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(path) << text.substr(0, text.size() / 2);
  EXPECT_THROW(RestPoseRoadmap::load(
                   path, std::make_shared<CollisionModel>(model, loadScene("empty")), options),
               std::runtime_error);
}

TEST(Plans, BadRequestsNameWhatIsWrong) {
  auto message = [](PlanRequest req) {
    try {
      planMotion(req);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  PlanRequest req = request("planar-arm", "empty", "est", "q:theta1=0.3");
  PlanRequest r1 = req;
  r1.options.planner = "astar";
  EXPECT_NE(message(r1).find("astar"), std::string::npos);
  PlanRequest r2 = req;
  r2.options.params["no_such_param"] = "1";
  EXPECT_NE(message(r2).find("no_such_param"), std::string::npos);
  PlanRequest r3 = req;
  r3.options.params["goal_bias"] = "0.3";  // a real one is accepted
  EXPECT_EQ(message(r3), "(no error)");
  PlanRequest r4 = req;
  r4.options.time_limit_s = 0;
  EXPECT_NE(message(r4).find("options.time_limit_s"), std::string::npos);
  PlanRequest r5 = req;
  r5.start_inputs = Eigen::VectorXd::Constant(2, NAN);
  EXPECT_NE(message(r5).find("start_inputs"), std::string::npos);
  // A start hanging into the table.
  PlanRequest r6 = request("puppetcopter", "table", "est", "point:hand_l=0.05,0.24,0.40");
  r6.start.positions = {{"body_y", 0.36}, {"body_z", -0.72}};
  EXPECT_NE(message(r6).find("start"), std::string::npos);
}

// The library names fields (as its own types do), never a front end's flags.
TEST(Plans, ErrorsNameTheRequestsFieldNotAFlag) {
  auto field = [](PlanRequest req) {
    try {
      planMotion(req);
    } catch (const FieldError& e) {
      EXPECT_EQ(std::string(e.what()).find("--"), std::string::npos) << e.what();
      return e.field();
    }
    return std::string("(no error)");
  };
  PlanRequest req = request("planar-arm", "empty", "est", "q:theta1=0.3");
  PlanRequest r1 = req;
  r1.options.planner = "astar";
  EXPECT_EQ(field(r1), "options.planner");
  PlanRequest r2 = req;
  r2.options.rate_hz = 5000;
  EXPECT_EQ(field(r2), "options.rate_hz");
  PlanRequest r3 = req;
  r3.goal = GoalSpec::parse("q:theta9=0.1");
  EXPECT_EQ(field(r3), "goal.values[\"theta9\"]");
  PlanRequest r4 = request("arm3d", "empty", "est", "point:nope=0,0,1");
  EXPECT_EQ(field(r4), "goal.points[0].point");
  PlanRequest r5 = req;
  r5.start.positions = {{"theta9", 0.1}};
  EXPECT_EQ(field(r5), "start.positions[\"theta9\"]");
  PlanRequest r6 = req;
  r6.options.params["no_such"] = "1";
  EXPECT_EQ(field(r6), "options.params[\"no_such\"]");
  try {
    GoalSpec::parse("q:theta1");
    ADD_FAILURE() << "parsed a goal without a value";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "goal");
  }
}

TEST(Plans, APlanWhoseReSimulationFailsIsNotFoundAndCarriesNothing) {
  // At 1 Hz the verifying re-simulation takes 1 s steps, which the puppetcopter's Newton
  // iteration does not converge on: whatever the search found is not a plan.
  PlanRequest req = request("puppetcopter", "empty", "est", "point:hand_l=0.1,0.2,0.9", 1.0);
  req.options.rate_hz = 1.0;
  const Plan plan = planMotion(req);
  ASSERT_EQ(plan.outcome, PlanOutcome::NotFound) << plan.message;
  EXPECT_NE(plan.message.find("the re-simulation of the plan failed"), std::string::npos)
      << plan.message;
  // No inputs, and none of the half-filled prediction (it used to carry uninitialised rows).
  EXPECT_EQ(plan.samples(), 0);
  EXPECT_EQ(plan.states.rows(), 0);
  EXPECT_EQ(plan.tensions_N.rows(), 0);
  EXPECT_EQ(plan.clearance_m.size(), 0);
  EXPECT_EQ(plan.stage_clearance_m.size(), 0);
  EXPECT_EQ(plan.goal_distance.size(), 0);
  EXPECT_EQ(plan.min_stage_clearance_sample, -1);
}

TEST(Plans, ACancelledPlanThrowsPlanCancelled) {
  const ModelPtr model = loadModel("planar-arm");
  const std::string goal = "q:theta1=" + std::to_string(restValue(model, "theta1") + 0.4);
  for (const char* planner : {"est", "prm"}) {
    PlanRequest req = request("planar-arm", "empty", planner, goal, 30.0, 3);
    EXPECT_THROW(planMotion(req, {}, [] { return true; }), PlanCancelled) << planner;
  }
}

// A prm plan depends on the request and the roadmap it starts from: the same request on two
// fresh caches (two servers, say) gives the same plan; on one cache, a second query may skip the
// edges the first found invalid, and nothing else carries over.
TEST(Roadmap, TheSameSeedOnAFreshCacheGivesTheSamePlan) {
  const ModelPtr model = loadModel("planar-arm");
  const std::string goal = "q:theta1=" + std::to_string(restValue(model, "theta1") + 0.4);
  PlanRequest req = request("planar-arm", "empty", "prm", goal, 600.0, 5);
  req.options.roadmap.vertices = 40;
  RoadmapCache a, b;
  req.roadmaps = &a;
  const Plan first = planMotion(req);
  ASSERT_EQ(first.outcome, PlanOutcome::Exact) << first.message;
  EXPECT_GT(first.stats.roadmap_build_time_s, 0.0);
  req.roadmaps = &b;
  const Plan second = planMotion(req);
  ASSERT_EQ(first.samples(), second.samples());
  EXPECT_EQ((first.inputs - second.inputs).cwiseAbs().maxCoeff(), 0.0);
  // The same cache again: no build, the same plan; the roadmap's own edges on the path were
  // checked by the first query and are not simulated again (only those to the start and goal
  // vertices a query adds for itself are).
  req.roadmaps = &a;
  const Plan again = planMotion(req);
  EXPECT_EQ(again.stats.roadmap_build_time_s, 0.0);
  EXPECT_LE(again.stats.edges_validated, first.stats.edges_validated);
  ASSERT_EQ(first.samples(), again.samples());
  EXPECT_EQ((first.inputs - again.inputs).cwiseAbs().maxCoeff(), 0.0);
}

// What a query writes back: the verdicts of the roadmap's own edges it simulated.  A second
// query on the same roadmap simulates none of them again -- only edges to the vertices a query
// adds for itself (its start and goal), which no query remembers, and roadmap edges still
// unchecked: a valid verdict carries the edge's true duration, settling included, which may make
// a path of unchecked edges (costed at their lower bound) the cheaper one to try next time.
TEST(Roadmap, AQueryWritesBackEdgeVerdictsAndTheNextSimulatesNoneOfThemAgain) {
  const ModelPtr model = loadModel("puppetcopter");
  auto collision = std::make_shared<CollisionModel>(model, loadScene("table"));
  RoadmapOptions options;
  options.vertices = 40;
  const auto roadmap = RestPoseRoadmap::build(collision, options);
  const Eigen::VectorXd rho = model->defaultInputs();
  const RestPose rest = computeRestPose(model, rho);
  const Eigen::VectorXd still = Eigen::VectorXd::Zero(model->nd());
  GoalEvaluator goal(model, GoalSpec::parse("point:hand_l=0.05,0.24,0.40;radius=0.04"));
  auto unknownEdges = [&] {
    int n = 0;
    for (const auto& e : roadmap->edges()) n += e.state == RestPoseRoadmap::EdgeState::Unknown;
    return n;
  };
  const int unknown_before = unknownEdges();
  const RestPoseRoadmap::QueryResult first = roadmap->query(rest.q, still, rho, goal, 30.0, 1);
  ASSERT_TRUE(first.found) << first.message;
  // The path's pairs of the roadmap's own vertices (a query's own vertices are negative).
  std::vector<std::pair<int, int>> own;
  for (std::size_t k = 0; k + 1 < first.path.size(); ++k)
    if (first.path[k] >= 0 && first.path[k + 1] >= 0)
      own.emplace_back(first.path[k], first.path[k + 1]);
  ASSERT_FALSE(own.empty()) << "a path through the roadmap was expected";
  const int unknown_after_first = unknownEdges();
  EXPECT_GT(first.roadmap_edges_validated, 0);
  EXPECT_EQ(unknown_after_first, unknown_before - first.roadmap_edges_validated);  // all kept
  std::vector<RestPoseRoadmap::EdgeState> verdicts;
  for (const auto& e : roadmap->edges()) {
    verdicts.push_back(e.state);
    if (std::find(own.begin(), own.end(), std::make_pair(e.from, e.to)) != own.end()) {
      EXPECT_EQ(e.state, RestPoseRoadmap::EdgeState::Valid) << e.from << " -> " << e.to;
    }
  }
  const RestPoseRoadmap::QueryResult second = roadmap->query(rest.q, still, rho, goal, 30.0, 1);
  ASSERT_TRUE(second.found) << second.message;
  // Every roadmap edge the second query simulated was unchecked (each one it simulated took an
  // edge out of the unknown ones), and every verdict of the first stands.
  EXPECT_EQ(unknownEdges(), unknown_after_first - second.roadmap_edges_validated);
  std::size_t i = 0;
  for (const auto& e : roadmap->edges()) {
    if (verdicts[i] != RestPoseRoadmap::EdgeState::Unknown) {
      EXPECT_EQ(e.state, verdicts[i]) << e.from << " -> " << e.to;
    }
    ++i;
  }
}

TEST(Roadmap, TwoRequestsThatMissTheCacheAtOnceShareOneBuild) {
  const ModelPtr model = loadModel("planar-arm");
  auto collision = std::make_shared<CollisionModel>(model, loadScene("empty"));
  RoadmapOptions options;
  options.vertices = 40;
  RoadmapCache cache;
  RoadmapCache::Lookup results[2];
  std::thread other([&] { results[1] = cache.get(collision, options); });
  results[0] = cache.get(collision, options);
  other.join();
  EXPECT_EQ(results[0].roadmap, results[1].roadmap);
  EXPECT_EQ(int(results[0].built) + int(results[1].built), 1);
  EXPECT_EQ(cache.size(), 1u);
  // A waiter whose own request is cancelled stops waiting, and a cancelled build leaves
  // nothing behind.
  RoadmapOptions slow = options;
  slow.seed = 7;
  slow.vertices = 100000;
  std::atomic<bool> stop_builder{false};
  std::thread builder([&] {
    EXPECT_THROW(cache.get(collision, slow, {}, [&] { return stop_builder.load(); }),
                 PlanCancelled);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_THROW(cache.get(collision, slow, {}, [] { return true; }), PlanCancelled);
  stop_builder = true;
  builder.join();
  EXPECT_EQ(cache.size(), 1u);
}

// The fingerprint covers everything a roadmap depends on: change any of it and a saved roadmap
// is refused (and a roadmap folder's file name changes with it).
TEST(Roadmap, AnyChangeToModelSceneOrOptionsRefusesASavedRoadmap) {
  const ModelPtr model = loadModel("puppetcopter");
  const ScenePtr scene = loadScene("table");
  auto collision = std::make_shared<CollisionModel>(model, scene);
  RoadmapOptions options;
  options.vertices = 3;
  options.build_time_limit_s = 5;
  const std::string path = test::scratchDir("planner") + "/fingerprint.roadmap";
  RestPoseRoadmap::build(collision, options)->save(path);
  ASSERT_NO_THROW(RestPoseRoadmap::load(path, collision, options));
  const std::string base = RestPoseRoadmap::fingerprint(*collision, options);
  EXPECT_EQ(base.size(), 32u);
  auto refused = [&](const ModelPtr& m, const ScenePtr& s, const RoadmapOptions& o,
                     const char* what) {
    auto c = std::make_shared<CollisionModel>(m, s);
    EXPECT_NE(RestPoseRoadmap::fingerprint(*c, o), base) << what;
    EXPECT_THROW(RestPoseRoadmap::load(path, c, o), RoadmapFileError) << what;
  };
  auto changed = [&](auto&& change) {
    auto m = std::make_shared<Model>(*model);
    change(*m);
    return ModelPtr(m);
  };
  refused(changed([](Model& m) {
            m.masses[0].inertia_kgm2(0, 1) += 1e-7;  // a product of inertia
            m.masses[0].inertia_kgm2(1, 0) += 1e-7;
          }),
          scene, options, "product of inertia");
  refused(changed([](Model& m) { m.points[0].position_m.x() += 1e-6; }), scene, options,
          "named point");
  refused(changed([](Model& m) { m.dynamic[0].limit.softening *= 1.01; }), scene, options,
          "joint-limit softening");
  refused(changed([](Model& m) { m.kinematic[0].default_value += 1e-6; }), scene, options,
          "kinematic default");
  refused(changed([](Model& m) { m.dynamic[0].initial += 1e-6; }), scene, options, "initial guess");
  auto moved = std::make_shared<Scene>(*scene);
  moved->obstacles[0].pose.translation().x() += 1e-6;
  refused(model, moved, options, "an obstacle moved");
  RoadmapOptions other = options;
  other.settle_tolerance *= 1.01;
  refused(model, scene, other, "roadmap options");

  // A mesh link counts by its triangles, not by its file's name: the same mesh in another folder
  // fits, a vertex moved by a micrometre does not.
  const std::string dir = test::scratchDir("planner");
  auto writeTetrahedron = [&](const std::string& file, double tip_z) {
    std::ofstream(file) << "v 0 0 0\nv 0.02 0 0\nv 0 0.02 0\nv 0 0 " << tip_z
                        << "\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n";
  };
  auto withMesh = [&](const std::string& file) {
    return changed([&](Model& m) {
      m.geometry[0].shape = Shape{};
      m.geometry[0].shape.type = ShapeType::Mesh;
      m.geometry[0].shape.mesh_path = file;
    });
  };
  auto fingerprintOf = [&](const ModelPtr& m) {
    return RestPoseRoadmap::fingerprint(CollisionModel(m, scene), options);
  };
  writeTetrahedron(dir + "/link.obj", 0.02);
  writeTetrahedron(dir + "/copy-of-link.obj", 0.02);
  writeTetrahedron(dir + "/moved-link.obj", 0.020001);
  const std::string with_mesh = fingerprintOf(withMesh(dir + "/link.obj"));
  EXPECT_NE(with_mesh, base);
  EXPECT_EQ(fingerprintOf(withMesh(dir + "/copy-of-link.obj")), with_mesh);
  EXPECT_NE(fingerprintOf(withMesh(dir + "/moved-link.obj")), with_mesh);
}

// Every OMPL parameter of every tree planner has its range checked (OMPL checks none): values
// that returned INTERNAL (nan, inf, text, 1e400, kpiece's border_fraction = 5 and
// bad_score_factor = 0) or were taken silently (goal_bias = 2 or -1, est's range = -1) are
// FieldErrors naming the parameter; each planner's defaults pass.
TEST(PlannerOptionsCheck, EveryParameterValueIsCheckedAgainstItsRange) {
  auto refused = [](const std::string& planner, const std::string& key, const std::string& value) {
    PlannerOptions o;
    o.planner = planner;
    o.params[key] = value;
    try {
      checkPlannerOptions(o);
    } catch (const FieldError& e) {
      EXPECT_EQ(e.field(), "options.params[\"" + key + "\"]") << e.what();
      return true;
    }
    return false;
  };
  for (const char* bad : {"nan", "inf", "-inf", "abc", "1e400", "2", "-1", ""})
    EXPECT_TRUE(refused("rrt", "goal_bias", bad)) << bad;
  EXPECT_TRUE(refused("kpiece", "border_fraction", "5"));
  EXPECT_TRUE(refused("kpiece", "bad_score_factor", "0"));
  EXPECT_TRUE(refused("kpiece", "max_close_samples", "2.5"));
  EXPECT_TRUE(refused("est", "range", "-1"));
  EXPECT_TRUE(refused("rrt", "intermediate_states", "2"));
  EXPECT_FALSE(refused("rrt", "goal_bias", "1"));
  EXPECT_FALSE(refused("kpiece", "bad_score_factor", "1"));
  for (const std::string& planner : plannerNames()) {
    for (const auto& [key, value] : plannerParameters(planner)) {
      SCOPED_TRACE(planner + " " + key);
      EXPECT_FALSE(refused(planner, key, value));  // its default
      EXPECT_TRUE(refused(planner, key, "nan"));
      EXPECT_TRUE(refused(planner, key, "-1e9"));
    }
  }
}

// A bad file in the roadmap folder failed every prm request for its model and scene (INTERNAL)
// until a person deleted it.  Now it is told, set aside ("<file>.bad-...") and rebuilt, and the
// rebuilt roadmap replaces it: for a truncated file, flipped bytes, another roadmap's file,
// negative edge weights and a directory in its place.  A folder that cannot be written loses
// the save only.  Options outside their ranges (a NaN step) are refused before anything.
std::string fileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// A roadmap folder holding the planar arm's small roadmap (a folder of each test's own), and
// what the caches tell of its files.
class RoadmapFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    static int folders = 0;  // short names: a socket's path in it must fit in 108 bytes
    dir = test::scratchDir("roadmaps-" + std::to_string(++folders));
    options.vertices = 4;
    options.build_time_limit_s = 5;
    cache_options.directory = dir;
    cache_options.on_file_problem = [this](const std::string& m) { told.push_back(m); };
    path = RoadmapCache(cache_options).pathFor(RestPoseRoadmap::fingerprint(*collision, options));
    ASSERT_TRUE(RoadmapCache(cache_options).get(collision, options).built);
    good = fileText(path);
  }
  CollisionModelPtr collision =
      std::make_shared<CollisionModel>(loadModel("planar-arm"), loadScene("empty"));
  RoadmapOptions options;
  std::string dir;
  std::vector<std::string> told;
  RoadmapCacheOptions cache_options;
  std::string path;  // the roadmap's file
  std::string good;  // its text as built
};

TEST_F(RoadmapFolder, ABadFileIsSetAsideRebuiltAndReplaced) {
  RoadmapOptions other_options = options;
  other_options.vertices = 5;
  const std::string path_other =
      RoadmapCache(cache_options).pathFor(RestPoseRoadmap::fingerprint(*collision, other_options));
  RoadmapCache(cache_options).get(collision, other_options);

  std::string flipped = good;
  for (std::size_t i = 40; i < flipped.size(); i += 97) flipped[i] ^= 0x5a;
  std::string negative = good;
  const std::size_t edges = negative.find("edges ");
  ASSERT_NE(edges, std::string::npos);
  const std::size_t first_edge = negative.find('\n', edges) + 1;
  const std::size_t third_field = negative.find(' ', negative.find(' ', first_edge) + 1) + 1;
  negative.insert(third_field, "-");
  // One digit of a vertex changed: still a well-formed file, caught by its checksum alone.
  std::string digit = good;
  const std::size_t first_vertex = digit.find('\n', digit.find("vertices ")) + 1;
  const std::size_t some_digit = digit.find_first_of("123456789", first_vertex + 3);
  digit[some_digit] = digit[some_digit] == '9' ? '8' : char(digit[some_digit] + 1);
  const std::pair<const char*, std::function<void()>> damages[] = {
      {"a digit changed", [&] { std::ofstream(path) << digit; }},
      {"truncated", [&] { std::ofstream(path) << good.substr(0, good.size() / 2); }},
      {"bytes flipped", [&] { std::ofstream(path) << flipped; }},
      {"another roadmap's", [&] { std::ofstream(path) << fileText(path_other); }},
      {"a negative weight", [&] { std::ofstream(path) << negative; }},
      {"a directory",
       [&] {
         std::filesystem::remove(path);
         std::filesystem::create_directories(path + "/inside");
       }},
  };
  for (const auto& [what, damage] : damages) {
    SCOPED_TRACE(what);
    damage();
    told.clear();
    RoadmapCache cache(cache_options);
    RoadmapCache::Lookup found;
    ASSERT_NO_THROW(found = cache.get(collision, options));
    EXPECT_TRUE(found.built);
    ASSERT_EQ(told.size(), 1u);
    EXPECT_NE(told[0].find("set aside as " + path + ".bad-"), std::string::npos) << told[0];
    EXPECT_NO_THROW(RestPoseRoadmap::load(path, collision, options));  // replaced by a good one
  }
  int set_aside = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    set_aside += entry.path().string().find(".bad-") != std::string::npos;
  EXPECT_EQ(set_aside, 6);
  // Version 1, before checksums, is still read.
  std::string version1 = good.substr(0, good.rfind("checksum "));
  ASSERT_EQ(version1.rfind("marionette-roadmap 2\n", 0), 0u);
  version1[std::strlen("marionette-roadmap ")] = '1';
  std::ofstream(path) << version1;
  EXPECT_NO_THROW(RestPoseRoadmap::load(path, collision, options));


  // A folder that cannot be written: the roadmap is served from memory, the failure told.
  RoadmapCacheOptions unwritable = cache_options;
  unwritable.directory = dir + "/no/such/folder";
  told.clear();
  EXPECT_TRUE(RoadmapCache(unwritable).get(collision, options).built);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_NE(told[0].find("roadmap not saved (kept in memory)"), std::string::npos) << told[0];

  RoadmapOptions nan_step = options;
  nan_step.step_s = std::nan("");
  try {
    RoadmapCache(cache_options).get(collision, nan_step);
    FAIL();
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "options.roadmap.step_s");
  }
}

// A regular file in the folder that cannot be opened (permissions) is not set aside: its
// content may be good.  Rebuilt, told, and replaced by the new one.  (Anything else that cannot
// be opened -- a socket, a FIFO -- is not a roadmap file and is set aside: the next test.)
TEST_F(RoadmapFolder, ARoadmapFileThatCannotBeOpenedIsRebuiltNotSetAside) {
  if (::geteuid() == 0) GTEST_SKIP() << "as root, permissions stop no read";
  std::filesystem::permissions(path, std::filesystem::perms::none);
  EXPECT_THROW(RestPoseRoadmap::load(path, collision, options), RoadmapFileUnreadable);
  EXPECT_TRUE(RoadmapCache(cache_options).get(collision, options).built);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_NE(told[0].find("roadmap file not read"), std::string::npos) << told[0];
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    EXPECT_EQ(entry.path().string().find(".bad-"), std::string::npos) << entry.path();
  EXPECT_NO_THROW(RestPoseRoadmap::load(path, collision, options));
}

// The folder turned against the server: a FIFO in a roadmap's place blocked its
// open() for ever; a roadmap linked to /dev/zero was read without bound, one linked to
// /etc/passwd read; a lock linked outside the folder made the server create that file; a sparse
// gigabyte was read whole.  Now nothing in the folder is followed or waited on, a file is read
// only if it is regular and no larger than such a roadmap can be, and each of these is set
// aside (the link itself renamed), rebuilt and replaced -- quickly, and leaving what the links
// named untouched.
TEST_F(RoadmapFolder, AHostileOneIsNeitherFollowedNorWaitedOnNorReadWithoutBound) {
  const std::string outside = test::scratchDir("hostile_outside");
  ASSERT_LT(good.size(), RestPoseRoadmap::maxFileBytes(collision->model(), options));
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".lock");

  const std::string target = outside + "/made-by-the-server";
  const std::pair<const char*, std::function<void()>> hostile[] = {
      {"a FIFO", [&] { ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0); }},
      {"a socket",
       [&] {
         const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
         ASSERT_GE(fd, 0);
         sockaddr_un address{};
         address.sun_family = AF_UNIX;
         ASSERT_LT(path.size(), sizeof(address.sun_path));
         std::strcpy(address.sun_path, path.c_str());
         ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
         ::close(fd);
       }},
      {"a link to /dev/zero", [&] { std::filesystem::create_symlink("/dev/zero", path); }},
      {"a link to /etc/passwd", [&] { std::filesystem::create_symlink("/etc/passwd", path); }},
      {"a link to a good roadmap outside",
       [&] {
         std::ofstream(outside + "/good.roadmap") << good;
         std::filesystem::create_symlink(outside + "/good.roadmap", path);
       }},
      {"a sparse gigabyte",
       [&] {
         std::ofstream(path) << good;
         std::filesystem::resize_file(path, std::uintmax_t(1) << 30);
       }},
      {"a lock linked outside the folder",
       [&] {
         std::ofstream(path) << good;
         std::filesystem::create_symlink(target, path + ".lock");
       }},
      {"a FIFO as the lock",
       [&] {
         std::ofstream(path) << good;
         ASSERT_EQ(::mkfifo((path + ".lock").c_str(), 0644), 0);
       }},
  };
  for (const auto& [what, plant] : hostile) {
    SCOPED_TRACE(what);
    plant();
    told.clear();
    const auto t0 = std::chrono::steady_clock::now();
    RoadmapCache cache(cache_options);
    RoadmapCache::Lookup found;
    ASSERT_NO_THROW(found = cache.get(collision, options));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    const bool lock_planted = std::string(what).find("lock") != std::string::npos;
    // A hostile roadmap is set aside and rebuilt; a hostile lock is set aside, and the good
    // roadmap beside it loaded.
    EXPECT_EQ(found.built, !lock_planted);
    ASSERT_EQ(told.size(), 1u);
    EXPECT_NE(told[0].find("set aside as " + path + (lock_planted ? ".lock" : "") + ".bad-"),
              std::string::npos)
        << told[0];
    EXPECT_FALSE(std::filesystem::exists(target));
    // In place now: a regular roadmap file and a regular lock file of the folder's own.
    EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::symlink_status(path)));
    EXPECT_NO_THROW(RestPoseRoadmap::load(path, collision, options));
    cache.remember(*found.roadmap);  // a write-back takes the lock again
    EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::symlink_status(path + ".lock")));
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      std::filesystem::remove(entry.path());
  }
  EXPECT_EQ(fileText(outside + "/good.roadmap"), good);  // what a link named is untouched
  // Load (a caller's own file) refuses more bytes than such a roadmap takes, before reading.
  std::ofstream(path) << good;
  std::filesystem::resize_file(path, std::uintmax_t(1) << 30);
  EXPECT_THROW(RestPoseRoadmap::load(path, collision, options), RoadmapFileError);
}

// Servers sharing a roadmap folder (on NFS, say): one builds while the others wait for its lock
// and load its file; a write-back first takes over the verdicts already on disk, so none is lost
// to another server's write; a server takes up the verdicts others wrote when it next gets the
// roadmap; a waiter whose own request is cancelled stops waiting.
TEST(Roadmap, ServersSharingAFolderBuildOnceAndKeepEveryonesVerdicts) {
  const ModelPtr model = loadModel("puppetcopter");
  auto collision = std::make_shared<CollisionModel>(model, loadScene("table"));
  RoadmapOptions options;
  options.vertices = 40;
  RoadmapCacheOptions folder;
  folder.directory = test::scratchDir("shared_roadmaps");
  std::filesystem::remove_all(folder.directory);
  std::filesystem::create_directories(folder.directory);
  RoadmapCache server_a(folder), server_b(folder), server_c(folder);
  RoadmapCache::Lookup a, b;
  std::thread other([&] { b = server_b.get(collision, options); });
  a = server_a.get(collision, options);
  other.join();
  const auto c = server_c.get(collision, options);
  EXPECT_FALSE(c.built);
  EXPECT_EQ(int(a.built) + int(b.built), 1) << "exactly one server builds";
  EXPECT_NE(a.roadmap, b.roadmap);  // two processes' own copies ...
  ASSERT_EQ(a.roadmap->vertices().size(), b.roadmap->vertices().size());  // ... of one roadmap
  for (std::size_t i = 0; i < a.roadmap->vertices().size(); ++i)
    EXPECT_EQ(a.roadmap->vertices()[i].rho, b.roadmap->vertices()[i].rho);

  const Eigen::VectorXd rho = model->defaultInputs();
  const RestPose rest = computeRestPose(model, rho);
  const Eigen::VectorXd still = Eigen::VectorXd::Zero(model->nd());
  using State = RestPoseRoadmap::EdgeState;
  auto checked = [](const RestPoseRoadmap& roadmap) {
    std::map<std::pair<int, int>, State> out;
    for (const auto& e : roadmap.edges())
      if (e.state != State::Unknown) out[{e.from, e.to}] = e.state;
    return out;
  };
  const auto built_with = checked(*b.roadmap);
  GoalEvaluator goal(model, GoalSpec::parse("point:hand_l=0.05,0.24,0.40;radius=0.04"));
  const auto r = a.roadmap->query(rest.q, still, rho, goal, 30.0, 1);
  ASSERT_TRUE(r.found) << r.message;
  EXPECT_GT(r.roadmap_edges_validated, 0);
  server_a.remember(*a.roadmap);
  const auto found_by_a = checked(*a.roadmap);
  ASSERT_GT(found_by_a.size(), built_with.size());
  // b has not seen a's verdicts: its write must not lose them (it takes them over first).
  EXPECT_EQ(checked(*b.roadmap), built_with);
  server_b.remember(*b.roadmap);
  const std::string path = server_a.pathFor(a.roadmap->fingerprintId());
  const auto on_disk = checked(*RestPoseRoadmap::load(path, collision, options));
  EXPECT_EQ(on_disk, found_by_a);
  EXPECT_EQ(checked(*b.roadmap), found_by_a);
  // A third server that loaded the roadmap before a's write takes a's verdicts up when it next
  // gets it (the file changed).
  EXPECT_EQ(checked(*c.roadmap), built_with);
  EXPECT_EQ(server_c.get(collision, options).roadmap, c.roadmap);
  EXPECT_EQ(checked(*c.roadmap), found_by_a);

  // Another server holds the lock (building, say): a request that needs the roadmap waits, and
  // stops waiting when it is cancelled; the holder's death (its descriptor closed) frees it.
  const int holder = ::open((path + ".lock").c_str(), O_RDWR);
  ASSERT_GE(holder, 0);
  struct flock whole {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  ASSERT_EQ(::fcntl(holder, F_OFD_SETLK, &whole), 0);
  std::filesystem::remove(path);  // to be built again, by whoever holds the lock
  RoadmapCache server_d(folder);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(
      server_d.get(
          collision, options, {},
          [&] { return std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(200); }),
      PlanCancelled);
  ::close(holder);
  EXPECT_TRUE(server_d.get(collision, options).built);
}

// The one pipeline (server, CLI and benchmark): an exact plan is optimized and the gains are
// along what is returned; a plan that is not exact is not optimized.
TEST(Pipeline, OptimizesExactPlansOnlyAndPutsTheGainsOnWhatItReturns) {
  const ModelPtr model = loadModel("planar-arm");
  const std::string goal = "q:theta1=" + std::to_string(restValue(model, "theta1") + 0.3);
  PlanRequest req = request("planar-arm", "empty", "est", goal);
  PipelineOptions options;
  options.optimization = OptimizationOptions{};
  options.optimization->time_limit_s = 30;
  options.gains = control::LqrWeights{};
  const PipelineResult done = runPipeline(req, options);
  ASSERT_EQ(done.plan.outcome, PlanOutcome::Exact);
  ASSERT_TRUE(done.optimized);
  EXPECT_TRUE(done.no_gains.empty()) << done.no_gains;
  EXPECT_EQ(&done.result(), &done.optimized->plan);
  EXPECT_EQ(static_cast<int>(done.result().gains.K.size()), done.result().samples() - 1);
  EXPECT_TRUE(done.plan.gains.empty());  // the plan as found is kept as it was
  // A budget too small to reach the goal: nothing to optimize; the gains track what there is (or,
  // with no motion, say why there are none).
  req.options.max_propagations = 50;
  const PipelineResult short_of_it = runPipeline(req, options);
  EXPECT_NE(short_of_it.plan.outcome, PlanOutcome::Exact);
  EXPECT_FALSE(short_of_it.optimized);
  if (short_of_it.plan.samples() > 1)
    EXPECT_EQ(static_cast<int>(short_of_it.plan.gains.K.size()), short_of_it.plan.samples() - 1);
  else
    EXPECT_EQ(short_of_it.no_gains, "no plan");
  // Options are checked before anything is planned.
  options.optimization->settle_s = -1;
  EXPECT_THROW(runPipeline(req, options), FieldError);
}

// One base for the libraries' errors: caught as marionette::Error, each names its field (or none)
// and is still its standard class with the same message.
TEST(Errors, EveryLibraryErrorIsAMarionetteErrorAndStillItsStandardClass) {
  PlanRequest req = request("planar-arm", "empty", "nope", "q:theta1=0.3");
  try {
    planMotion(req);
    FAIL() << "an unknown planner was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "options.planner");
    EXPECT_NE(std::string(e.what()).find("unknown 'nope'"), std::string::npos) << e.what();
    EXPECT_NE(dynamic_cast<const std::invalid_argument*>(&e), nullptr);
  }
  req.options.planner = "est";
  try {
    planMotion(req, {}, [] { return true; });
    FAIL() << "a cancelled plan returned";
  } catch (const std::runtime_error& e) {  // PlanCancelled, as ever
    const auto* error = dynamic_cast<const Error*>(&e);
    ASSERT_NE(error, nullptr);
    EXPECT_EQ(error->field(), "");
    EXPECT_STREQ(error->what(), e.what());
  }
  try {
    loadModelString("name: x\nframes: [{name: a, parent: nowhere}]\n", "x.yaml");
    FAIL() << "a bad model loaded";
  } catch (const Error& e) {
    EXPECT_FALSE(e.field().empty()) << e.what();  // the description's field
  }
}
