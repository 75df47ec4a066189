// SPDX-License-Identifier: BSD-3-Clause
// The planning service over real channels on loopback: every RPC's round trip against the
// in-process library; bad requests get the right code and a message naming the field (and the
// server goes on serving); deadlines and cancellation stop a long plan within 100 ms; a full
// pool refuses at once; tokens off loopback; TLS with a certificate made here.
#include <google/protobuf/stubs/logging.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <regex>
#include <sstream>
#include <thread>
#include <tuple>

#include "marionette/control/tracking_lqr.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/environments/scene_contacts.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/performance/plan_performance.hpp"
#include "marionette/performance/program.hpp"
#include "marionette/plan/plan_file.hpp"
#include "marionette/planner/pipeline.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/service/server.hpp"
#include "marionette/service/wire.hpp"
#include "marionette/v1/planner.grpc.pb.h"
#include "support/running_server.hpp"
#include "support/test_paths.hpp"

namespace marionette {
namespace {

using service::PlannerServer;
using service::ServerOptions;
using test::durationMs;
using test::Running;
namespace v1 = ::marionette::v1;
using Clock = std::chrono::steady_clock;

v1::PlanRequest armRequest(double time_limit_s = 10.0) {
  v1::PlanRequest r;
  r.mutable_model()->set_name("planar-arm");
  r.mutable_scene()->set_name("empty");
  r.set_planner("est");
  (*r.mutable_goal()->mutable_joints()->mutable_values())["theta1"] = 0.0;  // set below
  r.set_time_limit_s(time_limit_s);
  r.set_seed(3);
  return r;
}

// A plan that cannot succeed, so that it runs until its deadline (a budget of propagations no
// test reaches): the arm's tip to a point it cannot reach.
v1::PlanRequest hopelessRequest(double time_limit_s) {
  v1::PlanRequest r;
  r.mutable_model()->set_name("arm3d");
  r.mutable_scene()->set_name("pillars");
  r.set_planner("kpiece");
  auto* t = r.mutable_goal()->mutable_points()->add_targets();
  t->set_point("hand");
  t->mutable_position_m()->set_x(0.0);
  t->mutable_position_m()->set_y(0.0);
  t->mutable_position_m()->set_z(0.05);  // 0.65 m below the shoulder: out of reach
  r.set_time_limit_s(time_limit_s);
  r.set_max_propagations(10'000'000'000ull);
  return r;
}

// The planar arm's theta1 target: 0.3 rad from its rest pose (as the planning tests).
void setArmGoal(v1::PlanRequest& r) {
  const ModelPtr m = loadModel("planar-arm");
  const StartState s = resolveStart(m, m->defaultInputs(), StartSpec{});
  (*r.mutable_goal()->mutable_joints()->mutable_values())["theta1"] =
      s.q[m->variableIndex("theta1")] + 0.3;
}

// A Simulate the server refuses as INVALID_ARGUMENT, its message containing `text`.
void expectSimulateRefused(Running& s, const v1::SimulateRequest& r, const std::string& text) {
  grpc::ClientContext ctx;
  v1::SimulateResponse out;
  const grpc::Status st = s.stub->Simulate(&ctx, r, &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_NE(st.error_message().find(text), std::string::npos) << st.error_message();
}

TEST(Service, ListsAndDescribesWhatTheLibraryHas) {
  Running s;
  grpc::ClientContext c1, c2, c3;
  v1::ListModelsResponse models;
  ASSERT_TRUE(s.stub->ListModels(&c1, {}, &models).ok());
  ASSERT_EQ(models.models_size(), static_cast<int>(builtinModelNames().size()));
  for (const auto& m : models.models()) {
    const ModelPtr local = loadModel(m.name());
    EXPECT_EQ(m.dynamic_count(), local->nd()) << m.name();
    EXPECT_EQ(m.kinematic_count(), local->nk()) << m.name();
    EXPECT_EQ(m.string_count(), local->nstrings()) << m.name();
  }
  v1::DescribeModelRequest dr;
  dr.mutable_model()->set_name("puppetcopter");
  v1::ModelDescription d;
  ASSERT_TRUE(s.stub->DescribeModel(&c2, dr, &d).ok());
  const ModelPtr pc = loadModel("puppetcopter");
  ASSERT_EQ(d.kinematic_size(), pc->nk());
  for (int i = 0; i < pc->nk(); ++i) {
    EXPECT_EQ(d.kinematic(i).name(), pc->kinematic[i].name);
    EXPECT_EQ(d.kinematic(i).lower(), pc->kinematic[i].lower);
    EXPECT_EQ(d.kinematic(i).upper(), pc->kinematic[i].upper);
    EXPECT_EQ(d.kinematic(i).default_value(), pc->kinematic[i].default_value);
    EXPECT_EQ(d.kinematic(i).max_speed(), pc->kinematic[i].max_speed);
  }
  EXPECT_EQ(d.kinematic(0).kind(), v1::VARIABLE_KIND_ROTATION);     // act_arm_l_yaw
  EXPECT_EQ(d.kinematic(2).kind(), v1::VARIABLE_KIND_TRANSLATION);  // act_arm_l_len: a winch
  EXPECT_EQ(d.kinematic(2).kind(), v1::VARIABLE_KIND_TRANSLATION);
  ASSERT_EQ(d.dynamic_size(), pc->nd());
  ASSERT_EQ(d.strings_size(), pc->nstrings());
  EXPECT_EQ(d.strings(2).length_variable(), "act_arm_l_len");
  bool has_hand = false;
  for (const auto& p : d.points()) has_hand = has_hand || p.name() == "hand_l";
  EXPECT_TRUE(has_hand);
  v1::ListScenesResponse scenes;
  ASSERT_TRUE(s.stub->ListScenes(&c3, {}, &scenes).ok());
  ASSERT_EQ(scenes.scenes_size(), static_cast<int>(builtinSceneNames().size()));
  for (const auto& sc : scenes.scenes())
    EXPECT_EQ(sc.triangles(), static_cast<int64_t>(loadScene(sc.name())->triangleCount()));
}

TEST(Service, SimulateEqualsTheInProcessSimulation) {
  Running s;
  const ModelPtr m = loadModel("puppetcopter");
  // 1 s at 50 Hz: the left arm's winch pulls in 5 cm and lets out again.
  v1::SimulateRequest req;
  req.mutable_model()->set_name("puppetcopter");
  req.mutable_scene()->set_name("table");
  req.mutable_inputs()->add_variables("act_arm_l_len");
  req.mutable_inputs()->set_rate_hz(50.0);
  const double l0 = m->kinematic[m->variableIndex("act_arm_l_len") - m->nd()].default_value;
  for (int i = 0; i <= 50; ++i)
    req.mutable_inputs()->add_values(l0 - 0.05 * std::sin(M_PI * i / 50.0));
  req.set_dt_s(0.02);
  grpc::ClientContext ctx;
  v1::SimulateResponse out;
  const grpc::Status st = s.stub->Simulate(&ctx, req, &out);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(out.samples_size(), 51);
  EXPECT_EQ(out.scene(), "table");

  // The same in-process.
  SimulationOptions opt;
  opt.dt_s = 0.02;
  opt.duration_s = 1.0;
  const InputSchedule schedule = wire::inputsFromProto(*m, req.inputs());
  std::vector<Eigen::VectorXd> qs;
  simulate(m, schedule, opt, [&](const SimulationRow& r) {
    qs.push_back(*r.q);
    return true;
  });
  ASSERT_EQ(qs.size(), 51u);
  for (int i = 0; i < 51; ++i)
    for (int j = 0; j < m->nd(); ++j) ASSERT_EQ(out.samples(i).q(j), qs[i][j]) << i << " " << j;
  EXPECT_GT(out.min_clearance_m(), 0.0);
  EXPECT_EQ(out.samples_in_collision(), 0);
  EXPECT_EQ(out.steps(), 50);
  for (const auto& smp : out.samples())
    for (double t : smp.tension_n()) EXPECT_GE(t, 0.0);
  // The table's floor may be touched, and the puppet's links one another, but nothing touched:
  // no contact pair is named, no sample has forces.
  EXPECT_EQ(out.contact_names_size(), 0);
  for (const auto& smp : out.samples()) {
    EXPECT_EQ(smp.contact_normal_n_size(), 0);
    EXPECT_EQ(smp.contact_friction_n_size(), 0);
  }
}

// The suspended mass set down on a floor raised to 10 cm (its longest string would hang it
// through the floor): over Plan the plan is exact and carries the floor's forces on the mass,
// named, equal to the in-process plan's.
TEST(Service, APlanThatTouchesTheFloorCarriesItsContactForces) {
  Running s;
  const std::string scene_yaml =
      "name: raised-floor\nobstacles:\n  - {name: floor, plane: {normal: [0, 0, 1], offset: "
      "0.1}}\n";
  v1::PlanRequest req;
  req.mutable_model()->set_name("suspended-mass");
  req.mutable_scene()->set_yaml(scene_yaml);
  req.set_planner("kpiece");
  req.set_seed(2);  // (the searches of 11 seeds in 15 end exact: test_touching_plans)
  req.set_raw(true);
  req.set_max_propagations(400'000);
  req.set_time_limit_s(300);
  auto* t = req.mutable_goal()->mutable_points()->add_targets();
  t->set_point("mass");
  t->mutable_position_m()->set_x(0.3);
  t->mutable_position_m()->set_z(0.12);
  req.mutable_goal()->set_tolerance(0.01);
  req.mutable_goal()->set_at_rest(true);
  grpc::ClientContext ctx;
  v1::PlanResponse out;
  const grpc::Status st = s.stub->Plan(&ctx, req, &out);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(out.outcome(), v1::OUTCOME_EXACT) << out.message();
  ASSERT_EQ(out.contact_names_size(), 1);
  EXPECT_EQ(out.contact_names(0), "floor/mass_0");
  const Plan remote = wire::planFromProto(out);
  const ModelPtr m = loadModel("suspended-mass");
  const PlanRequest local_req = wire::planRequestFromProto(
      req, m,
      std::make_shared<CollisionModel>(m, loadSceneString(scene_yaml, "raised.yaml"),
                                       problemCollisionOptions()),
      300.0);
  const Plan local = planMotion(local_req);
  EXPECT_EQ(remote.predicted.contact_names, local.predicted.contact_names);
  EXPECT_EQ(remote.predicted.contact_normal_N, local.predicted.contact_normal_N);
  EXPECT_EQ(remote.predicted.contact_friction_N, local.predicted.contact_friction_N);
  EXPECT_NEAR(remote.predicted.contact_normal_N(remote.samples() - 1, 0), 0.1244 * 9.81, 1e-6);
}

// PuppetCopter on a floor raised 4.35 cm (its feet hang 4.3 cm above the stage's): over Simulate
// its feet land and stand, the contact forces reported per pair that touched, touching is no
// collision, and
// every sample equals the in-process simulation with the scene's contacts to the bit.
TEST(Service, SimulateTouchesTheScenesFloorAsTheInProcessSimulationDoes) {
  Running s;
  const ModelPtr m = loadModel("puppetcopter");
  const std::string scene_yaml =
      "name: raised\nobstacles:\n  - {name: floor, plane: {normal: [0, 0, 1], offset: 0.0435},"
      " friction: 0.4}\n";
  v1::SimulateRequest req;
  req.mutable_model()->set_name("puppetcopter");
  req.mutable_scene()->set_yaml(scene_yaml);
  req.set_duration_s(2.0);
  grpc::ClientContext ctx;
  v1::SimulateResponse out;
  const grpc::Status st = s.stub->Simulate(&ctx, req, &out);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(out.samples_size(), 201);
  EXPECT_EQ(out.samples_in_collision(), 0);

  SimulationOptions opt;
  opt.duration_s = 2.0;
  opt.contacts = sceneContacts(*m, *loadSceneString(scene_yaml, "raised.yaml"));
  ASSERT_TRUE(opt.contacts);
  std::vector<Eigen::VectorXd> qs, normal, friction;
  simulate(m, InputSchedule::constant(*m), opt, [&](const SimulationRow& r) {
    qs.push_back(*r.q);
    normal.push_back(*r.contact_force_N);
    friction.push_back(r.contact_friction_N->colwise().norm().transpose());
    return true;
  });
  ASSERT_EQ(qs.size(), 201u);
  // Only the pairs that touched are named, each with its forces in every sample: the feet on the
  // floor.
  std::vector<int> touched;
  for (int r = 0; r < opt.contacts->rows(); ++r)
    for (int i = 0; i < 201; ++i)
      if (normal[i][r] != 0.0 || friction[i][r] != 0.0) {
        touched.push_back(r);
        break;
      }
  ASSERT_GT(touched.size(), 0u);
  ASSERT_EQ(out.contact_names_size(), static_cast<int>(touched.size()));
  for (std::size_t k = 0; k < touched.size(); ++k) {
    EXPECT_EQ(out.contact_names(k), opt.contacts->rowName(touched[k]));
    EXPECT_EQ(out.contact_names(k).rfind("floor/", 0), 0u) << out.contact_names(k);
  }
  double standing_N = 0.0;
  for (int i = 0; i < 201; ++i) {
    const v1::SimulationSample& smp = out.samples(i);
    for (int j = 0; j < m->nd(); ++j) ASSERT_EQ(smp.q(j), qs[i][j]) << i << " " << j;
    ASSERT_EQ(smp.contact_normal_n_size(), static_cast<int>(touched.size()));
    for (std::size_t k = 0; k < touched.size(); ++k) {
      ASSERT_EQ(smp.contact_normal_n(k), normal[i][touched[k]]) << i << " " << out.contact_names(k);
      ASSERT_EQ(smp.contact_friction_n(k), friction[i][touched[k]])
          << i << " " << out.contact_names(k);
    }
    if (i == 200) standing_N = normal[i].sum();
  }
  EXPECT_GT(standing_N, 0.05) << "its feet bear part of its weight at the end";
}

TEST(Service, PlanOverRpcEqualsTheInProcessPlanAndStreamsTheSame) {
  Running s;
  v1::PlanRequest req = armRequest();
  setArmGoal(req);
  req.set_raw(true);  // the search's plan (the optimized one: the next test)
  grpc::ClientContext ctx;
  v1::PlanResponse remote;
  const grpc::Status st = s.stub->Plan(&ctx, req, &remote);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(remote.outcome(), v1::OUTCOME_EXACT) << remote.message();

  const ModelPtr m = loadModel("planar-arm");
  PlanRequest local_req = wire::planRequestFromProto(
      req, m, std::make_shared<CollisionModel>(m, loadScene("empty"), problemCollisionOptions()),
      300.0);
  const Plan local = planMotion(local_req);
  const Plan back = wire::planFromProto(remote);
  ASSERT_EQ(back.samples(), local.samples());
  EXPECT_EQ(back.inputs, local.inputs);
  EXPECT_EQ(back.predicted.states, local.predicted.states);
  EXPECT_EQ(back.predicted.tensions_N, local.predicted.tensions_N);
  EXPECT_EQ(back.goal_sample, local.goal_sample);
  EXPECT_EQ(back.input_names, local.input_names);
  // The quality figures come over the wire as measured.
  ASSERT_TRUE(back.quality.measured);
  EXPECT_EQ(back.quality.input_jerk_rms, local.quality.input_jerk_rms);
  EXPECT_EQ(back.quality.string_catches, local.quality.string_catches);
  EXPECT_EQ(back.quality.snaps, local.quality.snaps);
  EXPECT_EQ(back.quality.peak_tension_ratio, local.quality.peak_tension_ratio);
  EXPECT_EQ(back.quality.residual_joint_speed_rms, local.quality.residual_joint_speed_rms);
  EXPECT_EQ(back.quality.first_snap_string, local.quality.first_snap_string);
  EXPECT_EQ(back.quality.first_snap_t_s, local.quality.first_snap_t_s);
  EXPECT_EQ(back.quality.peak_tension_t_s, local.quality.peak_tension_t_s);
  EXPECT_EQ(back.quality.swing_joint, local.quality.swing_joint);
  EXPECT_EQ(back.quality.swing_joint_speed_rms, local.quality.swing_joint_speed_rms);
  EXPECT_EQ(back.min_stage_clearance_m, local.min_stage_clearance_m);
  std::ostringstream a, b;
  writeInputsCsv(back, a);
  writeInputsCsv(local, b);
  EXPECT_EQ(a.str(), b.str());

  // The plan's inputs sent back to Simulate with dt_s = 0: its step is the inputs' period, the
  // one the plan was verified at, so the states are the plan's (at 0.01 s they differ by cm).
  {
    v1::SimulateRequest sim;
    sim.mutable_model()->set_name("planar-arm");
    *sim.mutable_inputs() = remote.inputs();
    grpc::ClientContext sim_ctx;
    v1::SimulateResponse out;
    ASSERT_TRUE(s.stub->Simulate(&sim_ctx, sim, &out).ok());
    ASSERT_GE(out.samples_size(), back.samples());
    for (int i = 0; i < back.samples(); ++i)
      for (int j = 0; j < m->nd(); ++j)
        EXPECT_NEAR(out.samples(i).q(j), back.predicted.states(i, j), 1e-9) << "sample " << i;
  }

  // PlanStream: the plan comes last and is the same plan.
  grpc::ClientContext sctx;
  auto reader = s.stub->PlanStream(&sctx, req);
  v1::PlanEvent e;
  std::vector<v1::PlanEvent> events;
  while (reader->Read(&e)) events.push_back(e);
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_FALSE(events.empty());
  ASSERT_TRUE(events.back().has_plan());
  for (std::size_t i = 0; i + 1 < events.size(); ++i) EXPECT_TRUE(events[i].has_progress());
  EXPECT_EQ(wire::planFromProto(events.back().plan()).inputs, local.inputs);
  // The "verify" event, just before the plan, has the search's final figures (it had zeros).
  ASSERT_GE(events.size(), 2u);
  const v1::PlanProgress& verify = events[events.size() - 2].progress();
  const v1::PlanStatistics& stats = events.back().plan().statistics();
  EXPECT_EQ(verify.phase(), "verify");
  EXPECT_GT(verify.propagations(), 0);
  EXPECT_EQ(verify.propagations(), stats.propagations());
  EXPECT_EQ(verify.states(), stats.tree_states());
  EXPECT_EQ(verify.best_goal_distance(), stats.best_goal_distance());
  EXPECT_EQ(events.back().plan().shortfalls_size(), 0);  // exact
  // One log line per request, naming model, planner and status.
  const std::string line = s.logLine("Plan");
  EXPECT_NE(line.find("\"model\": \"planar-arm\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"planner\": \"est\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"status\": \"OK\""), std::string::npos) << line;
  // The logged duration covers the whole call: at least the plan's own total time.
  EXPECT_GE(durationMs(line), 1000.0 * back.stats.total_time_s) << line;
  EXPECT_GT(back.stats.total_time_s, 0.0);
}

TEST(Service, APlanGivesItsStartAndGoalAsMessagesThatReSimulateIt) {
  Running s;
  v1::PlanRequest req = armRequest();
  setArmGoal(req);
  (*req.mutable_start()->mutable_input_values())["x"] = 0.32;         // default 0.30
  (*req.mutable_start()->mutable_velocity_values())["theta1"] = 0.1;  // rad/s
  // Verified at 0.2 s steps: Simulate's default step follows rates below 10 Hz too (it used to
  // fall back to 0.01 s there, and refuse 0.2 s).
  req.set_output_rate_hz(5.0);
  grpc::ClientContext ctx;
  v1::PlanResponse plan;
  const grpc::Status st = s.stub->Plan(&ctx, req, &plan);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_NE(plan.outcome(), v1::OUTCOME_NOT_FOUND) << plan.message();
  const ModelPtr m = loadModel("planar-arm");
  const Plan back = wire::planFromProto(plan);

  // The start in full: every input, every joint (the first state), the velocity requested.
  const v1::Start& start = plan.start_state();
  ASSERT_EQ(start.inputs_size(), 2);
  EXPECT_EQ(start.inputs(0), 0.32);
  EXPECT_EQ(start.inputs(1), m->defaultInputs()[1]);
  EXPECT_EQ(start.inputs(0), back.inputs(0, 0));
  ASSERT_EQ(start.positions_size(), m->nd());
  for (int j = 0; j < m->nd(); ++j) EXPECT_EQ(start.positions(j), back.predicted.states(0, j));
  ASSERT_EQ(start.velocity_values().size(), 1u);
  EXPECT_EQ(start.velocity_values().at("theta1"), 0.1);
  EXPECT_TRUE(start.input_values().empty());
  EXPECT_TRUE(start.position_values().empty());
  // The goal as planned for, its default tolerance filled in.
  const v1::Goal& goal = plan.goal_spec();
  ASSERT_TRUE(goal.has_joints());
  EXPECT_EQ(goal.joints().values().at("theta1"), req.goal().joints().values().at("theta1"));
  EXPECT_EQ(goal.tolerance(), 0.05);
  EXPECT_EQ(goal.rest_energy_j(), 2e-3);

  // Sent back as they are, with the plan's inputs and dt_s = 0: the plan's states.
  v1::SimulateRequest sim;
  sim.mutable_model()->set_name("planar-arm");
  *sim.mutable_start() = start;
  *sim.mutable_inputs() = plan.inputs();
  grpc::ClientContext sim_ctx;
  v1::SimulateResponse out;
  const grpc::Status sst = s.stub->Simulate(&sim_ctx, sim, &out);
  ASSERT_TRUE(sst.ok()) << sst.error_message();
  ASSERT_GE(out.samples_size(), back.samples());
  for (int i = 0; i < back.samples(); ++i)
    for (int j = 0; j < m->nd(); ++j)
      ASSERT_NEAR(out.samples(i).q(j), back.predicted.states(i, j), 1e-9) << "sample " << i;
  // Start inputs that are not the inputs' first sample are refused, naming the variable.
  sim.mutable_start()->set_inputs(0, 0.35);
  expectSimulateRefused(s, sim, "start.inputs[\"x\"]: 0.35 is not the first sample of `inputs`");
  sim.mutable_start()->clear_inputs();
  (*sim.mutable_start()->mutable_input_values())["L"] = 0.5;
  expectSimulateRefused(s, sim, "start.input_values[\"L\"]");
}

TEST(Service, APlanIsOptimizedByTheSolverAskedAndBadOptimizationOptionsNameTheirField) {
  Running s;
  v1::PlanRequest req = armRequest();
  setArmGoal(req);
  req.mutable_optimization()->set_method("interior-point");
  (*req.mutable_optimization()->mutable_weights())["swing"] = 2.0;
  grpc::ClientContext ctx;
  auto reader = s.stub->PlanStream(&ctx, req);
  v1::PlanEvent e;
  std::vector<v1::PlanEvent> events;
  while (reader->Read(&e)) events.push_back(e);
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_TRUE(events.back().has_plan());
  const v1::PlanResponse& plan = events.back().plan();
  ASSERT_TRUE(plan.has_optimization());
  const v1::OptimizationReport& r = plan.optimization();
  EXPECT_TRUE(r.improved()) << r.message();
  EXPECT_EQ(plan.outcome(), v1::OUTCOME_EXACT);
  EXPECT_GT(r.iterations(), 0);
  EXPECT_NE(r.method().find("interior-point"), std::string::npos) << r.method();
  bool optimize_event = false;
  for (const auto& ev : events)
    optimize_event = optimize_event || (ev.has_progress() && ev.progress().phase() == "optimize");
  EXPECT_TRUE(optimize_event);
  // The optimized plan is what comes back: its quality shows the settled swing.
  EXPECT_TRUE(plan.has_quality());

  for (const auto& [set, field] :
       std::vector<std::pair<std::function<void(v1::Optimization&)>, std::string>>{
           {[](v1::Optimization& o) { (*o.mutable_weights())["nope"] = 1.0; },
            "optimization.weights[\"nope\"]: unknown weight"},
           {[](v1::Optimization& o) { (*o.mutable_weights())["duration"] = 1.0; },
            "optimization.weights[\"duration\"]: unknown weight"},
           {[](v1::Optimization& o) { (*o.mutable_weights())["swing"] = -1.0; },
            "optimization.weights[\"swing\"]"},
           {[](v1::Optimization& o) { o.set_margin_m(-0.1); }, "optimization.margin_m"},
           {[](v1::Optimization& o) { o.set_time_limit_s(1e6); }, "optimization.time_limit_s"},
           {[](v1::Optimization& o) { o.set_max_iterations(-1); },
            "optimization.max_iterations: must be in [1, 10000]"},
           {[](v1::Optimization& o) { o.set_method("collocation"); },
            "optimization.method: expected \"transcription\", \"interior-point\" or \"ipopt\""},
           {[](v1::Optimization& o) { o.set_method("shooting"); },
            "optimization.method: expected \"transcription\", \"interior-point\" or \"ipopt\", "
            "got \"shooting\""}}) {
    v1::PlanRequest bad = req;
    set(*bad.mutable_optimization());
    grpc::ClientContext c;
    v1::PlanResponse out;
    const grpc::Status st = s.stub->Plan(&c, bad, &out);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << field;
    EXPECT_NE(st.error_message().find(field), std::string::npos) << st.error_message();
  }
  // The plan as found takes no optimization.
  v1::PlanRequest raw_and_optimized = req;
  raw_and_optimized.set_raw(true);
  raw_and_optimized.mutable_optimization()->set_enabled(true);
  grpc::ClientContext c;
  v1::PlanResponse out;
  const grpc::Status st = s.stub->Plan(&c, raw_and_optimized, &out);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(st.error_message().rfind("raw: ", 0), 0u) << st.error_message();
}

// By default the service runs the contact-implicit transcription on the plan it found: what
// comes back is the in-process pipeline's optimized plan, bit for bit, and ends at rest
// (re-simulated at the plan's step from knots twice as far apart: within a tenth of the
// stage-worthy 0.1 rad/s).  `raw` gives the search's plan, no optimization.
TEST(Service, APlanIsOptimizedByTranscriptionByDefaultAndRawIsThePlanAsFound) {
  Running s;
  v1::PlanRequest req = armRequest();
  setArmGoal(req);
  grpc::ClientContext ctx;
  v1::PlanResponse plan;
  ASSERT_TRUE(s.stub->Plan(&ctx, req, &plan).ok());
  ASSERT_TRUE(plan.has_optimization());
  EXPECT_TRUE(plan.optimization().improved()) << plan.optimization().message();
  EXPECT_NE(plan.optimization().method().find("contact-implicit transcription"), std::string::npos);
  EXPECT_EQ(plan.outcome(), v1::OUTCOME_EXACT);
  EXPECT_LT(plan.quality().residual_joint_speed_rms(), 0.01);

  const ModelPtr m = loadModel("planar-arm");
  const PlanRequest local_req = wire::planRequestFromProto(
      req, m, std::make_shared<CollisionModel>(m, loadScene("empty"), problemCollisionOptions()),
      300.0);
  PipelineOptions pipeline;
  pipeline.optimization = OptimizationOptions{};
  const PipelineResult local = runPipeline(local_req, pipeline);
  ASSERT_TRUE(local.optimized);
  EXPECT_EQ(wire::planFromProto(plan).inputs, local.optimized->plan.inputs);

  req.set_raw(true);
  grpc::ClientContext raw_ctx;
  v1::PlanResponse raw;
  ASSERT_TRUE(s.stub->Plan(&raw_ctx, req, &raw).ok());
  EXPECT_FALSE(raw.has_optimization());
  EXPECT_EQ(wire::planFromProto(raw).inputs, local.plan.inputs);
  EXPECT_NE(wire::planFromProto(raw).inputs, local.optimized->plan.inputs);

  // A server whose maximum time limit is below the default cap (20 s) caps the default there,
  // rather than refusing a request that set nothing.
  ServerOptions brief;
  brief.listen = "127.0.0.1:0";
  brief.max_time_limit_s = 5.0;
  Running b(brief);
  req.set_raw(false);
  req.set_time_limit_s(5.0);
  grpc::ClientContext brief_ctx;
  v1::PlanResponse capped;
  const grpc::Status st = b.stub->Plan(&brief_ctx, req, &capped);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_TRUE(capped.optimization().improved()) << capped.optimization().message();
}

// PlanRequest.gains: the plan comes with its feedback gains, the very ones computed in-process
// with those weights, and they survive planFromProto; bad weights name their field.
TEST(Service, APlanComesWithItsFeedbackGainsWhenAsked) {
  Running s;
  v1::PlanRequest req = armRequest();
  setArmGoal(req);
  req.mutable_gains()->set_enabled(true);
  (*req.mutable_gains()->mutable_weights())["position"] = 1e3;
  grpc::ClientContext ctx;
  v1::PlanResponse out;
  ASSERT_TRUE(s.stub->Plan(&ctx, req, &out).ok());
  ASSERT_EQ(out.outcome(), v1::OUTCOME_EXACT) << out.message();
  const Plan plan = wire::planFromProto(out);
  ASSERT_EQ(plan.gains.K.size() + 1, static_cast<std::size_t>(plan.samples()));
  EXPECT_EQ(plan.gains.weights.position, 1e3);
  EXPECT_EQ(plan.gains.weights.velocity, control::LqrWeights{}.velocity);
  control::LqrWeights w;
  w.position = 1e3;
  const control::TrackingGains local =
      control::planTrackingGains(loadModel("planar-arm"), plan.inputs,
                                 plan.predicted.states.row(0).transpose(), plan.rate_hz, w);
  ASSERT_EQ(local.K.size(), plan.gains.K.size());
  for (std::size_t k = 0; k < local.K.size(); ++k)
    EXPECT_LE((local.K[k] - plan.gains.K[k]).cwiseAbs().maxCoeff(),
              1e-12 * local.K[k].cwiseAbs().maxCoeff());
  for (const auto& [name, value, field] : std::vector<std::tuple<std::string, double, std::string>>{
           {"nope", 1.0, "gains.weights[\"nope\"]: unknown weight"},
           {"correction", 0.0, "gains.weights[\"correction\"]: must be in [1e-09, 1e+09]"},
           {"rig", -1.0, "gains.weights[\"rig\"]: must be in [0, 1e+09]"},
           {"position", 1e308, "gains.weights[\"position\"]: must be in [0, 1e+09]"}}) {
    v1::PlanRequest bad = req;
    (*bad.mutable_gains()->mutable_weights())[name] = value;
    grpc::ClientContext c;
    v1::PlanResponse r;
    const grpc::Status st = s.stub->Plan(&c, bad, &r);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << field;
    EXPECT_NE(st.error_message().find(field), std::string::npos) << st.error_message();
  }
}

TEST(Service, PlanStreamReportsProgressOfALongPlan) {
  Running s;
  grpc::ClientContext ctx;
  auto reader = s.stub->PlanStream(&ctx, hopelessRequest(1.5));
  v1::PlanEvent e;
  int progress = 0;
  double last_elapsed = -1.0;
  bool plan = false;
  while (reader->Read(&e)) {
    if (e.has_progress()) {
      ++progress;
      EXPECT_GE(e.progress().elapsed_s(), last_elapsed);
      last_elapsed = e.progress().elapsed_s();
    }
    plan = e.has_plan();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_TRUE(plan);
  EXPECT_GE(progress, 1);
  // Out of reach: approximate, and the response says why in a field.
  ASSERT_EQ(e.plan().outcome(), v1::OUTCOME_APPROXIMATE) << e.plan().message();
  ASSERT_GE(e.plan().shortfalls_size(), 1);
  EXPECT_EQ(e.plan().shortfalls(e.plan().shortfalls_size() - 1), v1::SHORTFALL_GOAL_NOT_REACHED);
  EXPECT_EQ(e.plan().goal_sample(), -1);
}

TEST(Service, AnApproximatePlanListsEveryShortfall) {
  Plan p;
  p.outcome = PlanOutcome::Approximate;
  p.collision_free = false;
  p.limit_violations = {"x: speed 1 > max_speed 0.5 at sample 3"};
  p.goal_sample = -1;
  v1::PlanResponse out;
  wire::planToProto(p, &out);
  ASSERT_EQ(out.shortfalls_size(), 3);
  EXPECT_EQ(out.shortfalls(0), v1::SHORTFALL_COLLISION);
  EXPECT_EQ(out.shortfalls(1), v1::SHORTFALL_INPUT_LIMITS);
  EXPECT_EQ(out.shortfalls(2), v1::SHORTFALL_GOAL_NOT_REACHED);
  p.collision_free = true;
  p.limit_violations.clear();
  wire::planToProto(p, &out);
  ASSERT_EQ(out.shortfalls_size(), 1);
  EXPECT_EQ(out.shortfalls(0), v1::SHORTFALL_GOAL_NOT_REACHED);
  // An optimized plan that came within 1 cm of the stage against a 2 cm margin.
  p.goal_sample = 10;
  p.min_stage_clearance_m = 0.01;
  p.clearance_margin_m = 0.02;
  wire::planToProto(p, &out);
  ASSERT_EQ(out.shortfalls_size(), 1);
  EXPECT_EQ(out.shortfalls(0), v1::SHORTFALL_CLEARANCE_MARGIN);
  EXPECT_EQ(out.clearance_margin_m(), 0.02);
  EXPECT_EQ(wire::planFromProto(out).clearance_margin_m, 0.02);
  p.clearance_margin_m = 0.0;
  p.outcome = PlanOutcome::Exact;
  p.goal_sample = 10;
  wire::planToProto(p, &out);
  EXPECT_EQ(out.shortfalls_size(), 0);
}

// Each bad request gets the right code and a message naming the field; the server then still
// answers a good one.
TEST(Service, BadRequestsNameTheFieldAndTheServerGoesOn) {
  Running s;
  struct Case {
    const char* what;
    std::function<void(v1::PlanRequest&)> spoil;
    grpc::StatusCode code;
    const char* field;
  };
  const std::vector<Case> cases = {
      {"wrong-length start vector",
       [](v1::PlanRequest& r) {
         r.mutable_start()->add_inputs(0.1);
         r.mutable_start()->add_inputs(0.2);
         r.mutable_start()->add_inputs(0.3);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "start.inputs"},
      {"NaN in the goal",
       [](v1::PlanRequest& r) {
         (*r.mutable_goal()->mutable_joints()->mutable_values())["theta1"] = std::nan("");
       },
       grpc::StatusCode::INVALID_ARGUMENT, "goal.joints.values[\"theta1\"]"},
      {"NaN start input",
       [](v1::PlanRequest& r) { (*r.mutable_start()->mutable_input_values())["x"] = std::nan(""); },
       grpc::StatusCode::INVALID_ARGUMENT, "start.input_values[\"x\"]"},
      {"goal outside the stage",
       [](v1::PlanRequest& r) {
         r.mutable_model()->set_name("puppetcopter");
         r.mutable_scene()->set_name("table");
         r.mutable_goal()->Clear();
         auto* t = r.mutable_goal()->mutable_points()->add_targets();
         t->set_point("hand_l");
         t->mutable_position_m()->set_x(25.0);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "goal.points.targets[0].position_m"},
      {"unknown planner parameter",
       [](v1::PlanRequest& r) { (*r.mutable_parameters())["nope"] = "1"; },
       grpc::StatusCode::INVALID_ARGUMENT, "parameters[\"nope\"]"},
      {"a planner parameter that is not a number (OMPL throws)",
       [](v1::PlanRequest& r) { (*r.mutable_parameters())["range"] = "x"; },
       grpc::StatusCode::INVALID_ARGUMENT,
       "parameters[\"range\"]: planner 'est': range must be a number in [0, 10000] (got 'x')"},
      {"a planner parameter out of its range (OMPL takes it)",
       [](v1::PlanRequest& r) { (*r.mutable_parameters())["goal_bias"] = "2"; },
       grpc::StatusCode::INVALID_ARGUMENT,
       "parameters[\"goal_bias\"]: planner 'est': goal_bias must be a number in [0, 1]"},
      {"time limit below 0", [](v1::PlanRequest& r) { r.set_time_limit_s(-1); },
       grpc::StatusCode::INVALID_ARGUMENT, "time_limit_s"},
      {"time limit above the maximum", [](v1::PlanRequest& r) { r.set_time_limit_s(1e6); },
       grpc::StatusCode::INVALID_ARGUMENT, "time_limit_s"},
      {"inline model that does not parse",
       [](v1::PlanRequest& r) {
         r.mutable_model()->set_yaml("name: broken\ndynamic: [{name: a, limits: [1, 0]}\n");
       },
       grpc::StatusCode::INVALID_ARGUMENT, "model.yaml"},
      {"inline scene with a mesh file",
       [](v1::PlanRequest& r) {
         r.mutable_scene()->set_yaml("obstacles:\n  - {name: x, mesh: {file: /etc/passwd}}\n");
       },
       grpc::StatusCode::INVALID_ARGUMENT, "scene.yaml"},
      {"inline model with a mesh file",
       [](v1::PlanRequest& r) {
         r.mutable_model()->set_yaml(std::regex_replace(
             builtinModelText("planar-arm"), std::regex("\ngeometry:\n"),
             "\ngeometry:\n  - {name: secret, frame: link1, mesh: {file: /etc/hostname}}\n"));
       },
       grpc::StatusCode::INVALID_ARGUMENT, "mesh files"},
      {"unknown model", [](v1::PlanRequest& r) { r.mutable_model()->set_name("dragon"); },
       grpc::StatusCode::NOT_FOUND, "model.name"},
      {"unknown scene", [](v1::PlanRequest& r) { r.mutable_scene()->set_name("moon"); },
       grpc::StatusCode::NOT_FOUND, "scene.name"},
      {"unknown planner", [](v1::PlanRequest& r) { r.set_planner("astar"); },
       grpc::StatusCode::INVALID_ARGUMENT, "planner"},
      {"no goal", [](v1::PlanRequest& r) { r.clear_goal(); }, grpc::StatusCode::INVALID_ARGUMENT,
       "goal"},
      {"unknown joint in the goal",
       [](v1::PlanRequest& r) {
         (*r.mutable_goal()->mutable_joints()->mutable_values())["elbow9"] = 0.1;
       },
       grpc::StatusCode::INVALID_ARGUMENT, "goal"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    v1::PlanRequest r = armRequest(2.0);
    setArmGoal(r);
    c.spoil(r);
    grpc::ClientContext ctx;
    v1::PlanResponse out;
    const grpc::Status st = s.stub->Plan(&ctx, r, &out);
    EXPECT_EQ(st.error_code(), c.code) << st.error_message();
    EXPECT_NE(st.error_message().find(c.field), std::string::npos) << st.error_message();
  }
  // Simulate's own checks.
  {
    v1::SimulateRequest r;
    r.mutable_model()->set_name("planar-arm");
    r.mutable_inputs()->add_variables("x");
    r.mutable_inputs()->set_rate_hz(50);
    r.mutable_inputs()->add_values(0.0);
    r.mutable_inputs()->add_values(std::nan(""));
    expectSimulateRefused(s, r, "inputs.values[1][\"x\"]");
  }
  // Hostile inline YAML (200,000 nested lists: a recursive parser without a depth limit would
  // overflow its stack) and control characters are errors, not crashes.
  for (const std::string& yaml :
       {"name: x\ndynamic: " + std::string(200000, '[') + std::string(200000, ']') + "\n",
        std::string("\x01\x02\x03 \xc3\xbf\xc3\xbe\x00", 11)}) {  // (proto strings are UTF-8)
    v1::DescribeModelRequest r;
    r.mutable_model()->set_yaml(yaml);
    grpc::ClientContext ctx;
    v1::ModelDescription out;
    const grpc::Status st = s.stub->DescribeModel(&ctx, r, &out);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(st.error_message().find("model.yaml"), std::string::npos) << st.error_message();
  }
  // A simulation longer than the server computes in one answer.
  {
    v1::SimulateRequest r;
    r.mutable_model()->set_name("planar-arm");
    r.set_dt_s(0.001);
    r.set_duration_s(1000.0);
    expectSimulateRefused(s, r, "duration_s");
  }
  // Inputs at a tiny rate: their last time (the default duration) is far beyond the limit (the
  // step count overflowed a cast; found by the rpc_simulate fuzz target).
  {
    v1::SimulateRequest r;
    r.mutable_model()->set_name("planar-arm");
    r.mutable_inputs()->add_variables("x");
    r.mutable_inputs()->set_rate_hz(1e-300);
    r.mutable_inputs()->add_values(0.3);
    r.mutable_inputs()->add_values(0.3);
    expectSimulateRefused(s, r, "duration_s: 0 means the inputs' last time");
  }
  // A request over the size limit.
  {
    ServerOptions small;
    small.max_request_bytes = 4096;
    // Room to receive it (the default quota, 4 x 4 KB, under load reset the connection first:
    // UNAVAILABLE), so that the message's own size is what is refused.
    small.max_receive_memory_bytes = 1 << 20;
    Running t(small);
    v1::DescribeModelRequest r;
    r.mutable_model()->set_yaml(std::string(10000, '#'));
    grpc::ClientContext ctx;
    v1::ModelDescription out;
    EXPECT_EQ(t.stub->DescribeModel(&ctx, r, &out).error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  // And then a good request.
  v1::PlanRequest good = armRequest();
  setArmGoal(good);
  grpc::ClientContext ctx;
  v1::PlanResponse out;
  ASSERT_TRUE(s.stub->Plan(&ctx, good, &out).ok());
  EXPECT_EQ(out.outcome(), v1::OUTCOME_EXACT);
}

// The server's own record of how long the call ran (its log line) shows it stopped within
// 100 ms of the deadline / the cancel.  (The client's clock starts a little earlier than the
// server's, so this bound is slightly generous to the server.)
TEST(Service, DeadlineAndCancellationStopALongPlanWithinMs100) {
  ServerOptions o;
  o.workers = 1;
  o.max_queue = 0;
  Running s(o);
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1500));
    v1::PlanResponse out;
    const grpc::Status st = s.stub->Plan(&ctx, hopelessRequest(30.0), &out);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  // The server logs the call as its handler returns.
  for (int i = 0; i < 300 && s.logLine("Plan", 0).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // The cancel is measured from when it was really sent (a loaded machine may wake the
  // cancelling thread late; that is not the server's delay).
  double cancel_after_ms = 0.0;
  {
    grpc::ClientContext ctx;
    v1::PlanResponse out;
    const auto t0 = Clock::now();
    auto cancel = std::async(std::launch::async, [&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(1000));
      cancel_after_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      ctx.TryCancel();
    });
    const grpc::Status st = s.stub->Plan(&ctx, hopelessRequest(30.0), &out);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::CANCELLED);
  }
  for (int i = 0; i < 300 && s.logLine("Plan", 1).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::string deadline_line = s.logLine("Plan", 0), cancel_line = s.logLine("Plan", 1);
  EXPECT_NE(deadline_line.find("DEADLINE_EXCEEDED"), std::string::npos) << deadline_line;
  EXPECT_NE(cancel_line.find("CANCELLED"), std::string::npos) << cancel_line;
  // A big search tree by then (~10^5 motions): it is freed off the handler's thread.
  EXPECT_LE(durationMs(deadline_line), 1500.0 + 100.0) << deadline_line;
  EXPECT_LE(durationMs(cancel_line), cancel_after_ms + 100.0) << cancel_line;
  if (HasFailure()) std::cerr << "server log:\n" << s.sink.text();
  // The one worker is free again: a good plan runs.
  v1::PlanRequest good = armRequest();
  setArmGoal(good);
  grpc::ClientContext ctx;
  v1::PlanResponse out;
  EXPECT_TRUE(s.stub->Plan(&ctx, good, &out).ok());
}

// One worker and one queue slot: of four plans sent 50 ms apart, the first two to arrive are
// admitted (one runs, one waits) and the other two refused.  Timing bounds, generous on purpose:
// each admitted plan runs its 2 s time limit, so all four arrive while the first runs even on a
// loaded machine, in whatever order; a refusal comes back well before any worker is free
// (< 1 s), not after waiting for one (>= 2 s).
TEST(Service, AFullPoolRefusesTheExcessAtOnceAndFinishesTheRest) {
  ServerOptions o;
  o.workers = 1;
  o.max_queue = 1;
  Running s(o);
  std::vector<std::future<std::pair<grpc::Status, double>>> calls;
  for (int i = 0; i < 4; ++i) {
    calls.push_back(std::async(std::launch::async, [&] {
      grpc::ClientContext ctx;
      v1::PlanResponse out;
      const auto t0 = Clock::now();
      const grpc::Status st = s.stub->Plan(&ctx, hopelessRequest(2.0), &out);
      return std::make_pair(st, std::chrono::duration<double>(Clock::now() - t0).count());
    }));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // in order
  }
  int ok = 0, exhausted = 0;
  for (auto& f : calls) {
    const auto [st, seconds] = f.get();
    if (st.ok()) ++ok;
    if (st.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
      ++exhausted;
      EXPECT_LT(seconds, 1.0) << "refused at once, not after waiting";
      EXPECT_NE(st.error_message().find("busy"), std::string::npos);
    }
  }
  EXPECT_EQ(ok, 2);         // one ran, one waited and then ran
  EXPECT_EQ(exhausted, 2);  // the rest were refused
}

// DescribeModel of an inline model costs what its YAML holds: it takes a worker like a plan (8 at
// once were all admitted before).  With the one worker busy and no queue, it is refused.
TEST(Service, DescribeModelTakesAWorker) {
  ServerOptions o;
  o.workers = 1;
  o.max_queue = 0;
  Running s(o);
  auto busy = std::async(std::launch::async, [&] {
    grpc::ClientContext ctx;
    v1::PlanResponse out;
    return s.stub->Plan(&ctx, hopelessRequest(2.0), &out);
  });
  v1::DescribeModelRequest req;
  req.mutable_model()->set_name("planar-arm");
  v1::ModelDescription out;
  // Asked until the plan holds the worker (however slowly a loaded machine starts it): refused
  // while it runs.
  bool refused = false;
  while (!refused && busy.wait_for(std::chrono::milliseconds(50)) == std::future_status::timeout) {
    grpc::ClientContext ctx;
    refused =
        s.stub->DescribeModel(&ctx, req, &out).error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
  }
  EXPECT_TRUE(refused);
  EXPECT_TRUE(busy.get().ok());
  grpc::ClientContext again;
  EXPECT_TRUE(s.stub->DescribeModel(&again, req, &out).ok());  // a free worker: answered
}

TEST(Service, OffLoopbackNeedsATokenOrTls) {
  ServerOptions open;
  open.listen = "0.0.0.0:0";
  EXPECT_THROW(PlannerServer{open}, std::invalid_argument);
  EXPECT_TRUE(service::isLoopback("127.0.0.1:50051"));
  EXPECT_TRUE(service::isLoopback("localhost:1"));
  EXPECT_TRUE(service::isLoopback("[::1]:50051"));
  EXPECT_FALSE(service::isLoopback("0.0.0.0:50051"));
  EXPECT_FALSE(service::isLoopback("[::]:50051"));
  EXPECT_FALSE(service::isLoopback("192.168.1.4:50051"));

  ServerOptions with_token = open;
  with_token.token = "s3cret-token";
  Running s(with_token);
  {
    grpc::ClientContext ctx;
    v1::ListModelsResponse out;
    const grpc::Status st = s.stub->ListModels(&ctx, {}, &out);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer wrong-token!");
    v1::ListModelsResponse out;
    EXPECT_EQ(s.stub->ListModels(&ctx, {}, &out).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer s3cret-token");
    v1::ListModelsResponse out;
    EXPECT_TRUE(s.stub->ListModels(&ctx, {}, &out).ok());
    EXPECT_GT(out.models_size(), 0);
  }
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

TEST(Service, TlsRoundTripWithACertificateMadeHere) {
  const std::string dir = test::scratchDir("tls");
  const std::string cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
      dir + "/key.pem -out " + dir + "/cert.pem 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  ServerOptions o;
  o.listen = "0.0.0.0:0";  // off loopback: TLS makes it allowed
  o.tls_cert_file = dir + "/cert.pem";
  o.tls_key_file = dir + "/key.pem";
  Running s(o);  // its insecure channel cannot talk to a TLS port
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    v1::ListModelsResponse out;
    EXPECT_FALSE(s.stub->ListModels(&ctx, {}, &out).ok());
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = slurp(dir + "/cert.pem");
  auto channel = grpc::CreateChannel("localhost:" + std::to_string(s.server->port()),
                                     grpc::SslCredentials(ssl));
  auto stub = v1::Planner::NewStub(channel);
  grpc::ClientContext ctx;
  v1::ListScenesResponse out;
  const grpc::Status st = stub->ListScenes(&ctx, {}, &out);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(out.scenes_size(), static_cast<int>(builtinSceneNames().size()));
}

// --roadmap-dir: a prm plan leaves its roadmap there (service_test.py restarts a server on it).
TEST(Service, RoadmapsAreSavedToTheRoadmapDir) {
  const std::string dir = test::scratchDir("roadmaps");
  v1::PlanRequest req = armRequest();
  setArmGoal(req);
  req.set_planner("prm");
  ServerOptions o;
  o.roadmap_dir = dir;
  Running s(o);
  grpc::ClientContext ctx;
  v1::PlanResponse plan;
  ASSERT_TRUE(s.stub->Plan(&ctx, req, &plan).ok());
  EXPECT_EQ(plan.outcome(), v1::OUTCOME_EXACT);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[1], files[0] + ".lock");  // which server builds it, when servers share it
  // Named by the fingerprint alone (32 hex digits), never by anything the request chose.
  EXPECT_TRUE(std::regex_match(std::filesystem::path(files[0]).filename().string(),
                               std::regex("[0-9a-f]{32}\\.roadmap")))
      << files[0];
  EXPECT_GT(std::filesystem::file_size(files[0]), 100u);
}

// ---- Perform -------------------------------------------------------------------------------

const char* kSwayCsv = "t,mass_x,mass_y,mass_z\n0,0,0,0.5\n2,0.04,0,0.5\n4,0.04,0,0.46\n";
const char* kReturnKeys =
    "keyframes:\n  - {t: 0, points: {mass: [0.04, 0, 0.46]}}\n"
    "  - {t: 2, points: {mass: [0, 0, 0.5]}}\n";

v1::PerformRequest swayRequest() {
  v1::PerformRequest r;
  r.mutable_model()->set_name("suspended-mass");
  v1::PerformanceClip* c = r.add_clips();
  c->set_format(v1::PerformanceClip::FORMAT_MARKERS);
  c->set_text(kSwayCsv);
  c = r.add_clips();
  c->set_format(v1::PerformanceClip::FORMAT_KEYFRAMES);
  c->set_text(kReturnKeys);
  r.set_blend_s(0.5);
  r.set_speed(2.0);
  r.set_kinematic_only(true);  // deterministic: compared with the library's below
  return r;
}

TEST(Service, PerformOverRpcEqualsTheInProcessPerformance) {
  Running s;
  grpc::ClientContext ctx;
  auto reader = s.stub->Perform(&ctx, swayRequest());
  v1::PlanEvent e;
  std::vector<std::string> phases;
  while (reader->Read(&e))
    if (e.has_progress()) phases.push_back(e.progress().phase());
  const grpc::Status st = reader->Finish();
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_TRUE(e.has_plan());
  EXPECT_EQ(phases, std::vector<std::string>{"kinematic"});
  const Plan rpc = wire::planFromProto(e.plan());

  // The same clips and edits in process.
  PerformanceRequest req;
  req.model = loadModel("suspended-mass");
  PerformanceEdits edits;
  edits.blend_s = 0.5;
  edits.speed = 2.0;
  const PerformanceProgram program =
      assemblePerformance(req.model,
                          {{ClipFormat::Markers, kSwayCsv, "a", "", ""},
                           {ClipFormat::Keyframes, kReturnKeys, "b", "", ""}},
                          edits);
  req.targets = program.targets;
  req.options.dynamics = false;
  const Plan local = planPerformance(req);

  EXPECT_EQ(rpc.outcome, local.outcome);
  ASSERT_EQ(rpc.inputs.rows(), local.inputs.rows());
  // (4 s + 0.5 s blend + 2 s) at twice the speed, within a sample.
  EXPECT_NEAR((rpc.samples() - 1) / rpc.rate_hz, 3.25, 0.5 / rpc.rate_hz + 1e-9);
  EXPECT_LT((rpc.inputs - local.inputs).cwiseAbs().maxCoeff(), 1e-9);
  EXPECT_EQ(rpc.performance.targets.points, std::vector<std::string>{"mass"});
  ASSERT_EQ(rpc.performance.targets.positions_m.rows(),
            local.performance.targets.positions_m.rows());
  EXPECT_TRUE(rpc.performance.targets.positions_m.isApprox(local.performance.targets.positions_m));
  EXPECT_EQ(rpc.predicted.point_names, local.predicted.point_names);
  EXPECT_LT((rpc.predicted.points_m - local.predicted.points_m).cwiseAbs().maxCoeff(), 1e-9);
  ASSERT_EQ(rpc.performance.tracking.kinematic.size(), 1u);
  EXPECT_NEAR(rpc.performance.tracking.kinematic[0].rms_m,
              local.performance.tracking.kinematic[0].rms_m, 1e-9);
  EXPECT_TRUE(rpc.performance.tracking.dynamic.empty());
  ASSERT_EQ(rpc.performance.tracking.retarget.size(), 1u);
  EXPECT_EQ(rpc.performance.tracking.retarget[0].point, "mass");
  EXPECT_NEAR(rpc.performance.tracking.retarget[0].max_m,
              local.performance.tracking.retarget[0].max_m, 1e-12);
  EXPECT_EQ(rpc.performance.tracking.retarget_spans.size(),
            local.performance.tracking.retarget_spans.size());
  ASSERT_EQ(rpc.performance.tracking.untargeted.size(), 1u);
  EXPECT_EQ(rpc.performance.tracking.untargeted[0].point, "robot");
  EXPECT_NEAR(rpc.performance.tracking.untargeted[0].max_m,
              local.performance.tracking.untargeted[0].max_m, 1e-12);
  EXPECT_TRUE(e.plan().has_quality());
  EXPECT_EQ(e.plan().targets().source(), "clips[0].text + clips[1].text");
}

TEST(Service, BadPerformRequestsNameTheirField) {
  ServerOptions o;
  o.max_time_limit_s = 100;
  Running s(o);
  struct Case {
    std::function<void(v1::PerformRequest&)> spoil;
    const char* field;
  };
  const std::vector<Case> cases = {
      {[](v1::PerformRequest& r) { r.clear_clips(); }, "clips: "},
      {[](v1::PerformRequest& r) { r.mutable_clips(1)->clear_format(); }, "clips[1].format"},
      {[](v1::PerformRequest& r) {
         r.mutable_clips(0)->set_text("t,mass_x,mass_y,mass_z\n0,0,0\n");
       },
       "clips[0].text:2"},
      {[](v1::PerformRequest& r) {
         r.mutable_clips(1)->set_text("keyframes: [{t: 0, points: {nose: [0, 0, 0]}}]\n");
       },
       "clips[1].text:1"},
      {[](v1::PerformRequest& r) { r.mutable_clips(0)->set_map_yaml("points: {}"); },
       "clips[0].map_yaml"},
      {[](v1::PerformRequest& r) {
         r.mutable_clips(0)->set_format(v1::PerformanceClip::FORMAT_BVH);  // no built-in map
         r.mutable_clips(0)->set_text(
             "HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 0\n  CHANNELS 3 Xposition Yposition Zposition\n"
             "  End Site\n  {\n    OFFSET 0 1 0\n  }\n}\nMOTION\nFrames: 2\nFrame Time: 0.1\n"
             "0 0 0\n0 0 0\n");
       },
       "clips[0].map_yaml"},
      {[](v1::PerformRequest& r) { r.mutable_clips(0)->set_text(std::string(9 << 20, ' ')); },
       "clips[0].text: 9437184 bytes"},
      {[](v1::PerformRequest& r) { r.set_speed(100); }, "speed"},
      {[](v1::PerformRequest& r) { r.set_from_s(50); }, "from_s"},
      {[](v1::PerformRequest& r) { r.set_blend_s(std::nan("")); }, "blend_s"},
      {[](v1::PerformRequest& r) { r.set_loop(1000); }, "loop"},
      {[](v1::PerformRequest& r) { r.add_disable("tail"); }, "disable[0]"},
      {[](v1::PerformRequest& r) { r.set_rate_hz(5); }, "rate_hz"},
      {[](v1::PerformRequest& r) { r.set_margin_m(-1); }, "margin_m"},
      {[](v1::PerformRequest& r) { r.set_reach_tolerance_m(2); }, "reach_tolerance_m"},
      {[](v1::PerformRequest& r) { r.set_calm_weight(-0.5); }, "calm_weight"},
      {[](v1::PerformRequest& r) { r.set_calm_weight(std::nan("")); }, "calm_weight"},
      {[](v1::PerformRequest& r) { r.add_free_points("tail"); }, "free_points[0]"},
      {[](v1::PerformRequest& r) { r.set_time_limit_s(500); }, "time_limit_s"},
      {[](v1::PerformRequest& r) { (*r.mutable_weights())["nope"] = 1; }, "weights[\"nope\"]"},
      {[](v1::PerformRequest& r) { (*r.mutable_weights())["tracking"] = -1; }, "weights"},
      {[](v1::PerformRequest& r) { (*r.mutable_weights())["settle"] = 5; },
       "weights[\"settle\"]: settle: the performance's dynamics step has no such term"},
      {[](v1::PerformRequest& r) { r.mutable_model()->set_name("nope"); }, "model"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    v1::PerformRequest r = swayRequest();
    cases[i].spoil(r);
    grpc::ClientContext ctx;
    auto reader = s.stub->Perform(&ctx, r);
    v1::PlanEvent e;
    while (reader->Read(&e)) {
    }
    const grpc::Status st = reader->Finish();
    EXPECT_NE(st.error_code(), grpc::StatusCode::OK) << "case " << i;
    EXPECT_NE(st.error_code(), grpc::StatusCode::INTERNAL) << "case " << i;
    EXPECT_EQ(st.error_message().rfind(cases[i].field, 0), 0u)
        << "case " << i << ": " << st.error_message();
  }
  // And the server goes on.
  grpc::ClientContext ctx;
  auto reader = s.stub->Perform(&ctx, swayRequest());
  v1::PlanEvent e;
  while (reader->Read(&e)) {
  }
  EXPECT_TRUE(reader->Finish().ok());
}

TEST(Service, WireRoundTripsAreLossless) {
  // Goals of every kind, through the proto and back.
  for (const char* text :
       {"q:theta1=0.3,theta2=-0.1;tol=0.02;at-rest", "point:hand_l=0.05,0.24,0.40;radius=0.04",
        "rest-of:r=0.3,xr=0.7;at-rest;energy=0.001"}) {  // maps: by name
    v1::Goal g;
    wire::goalToProto(GoalSpec::parse(text), &g);
    EXPECT_EQ(wire::goalFromProto(g).describe(), GoalSpec::parse(text).describe()) << text;
  }
  // Starts: named inputs through the proto into a request; an unknown name is refused.
  const ModelPtr m = loadModel("suspended-mass");
  PlanRequest req;
  v1::Start start;
  (*start.mutable_input_values())["xr"] = 0.6;
  wire::applyStart(*m, start, req);
  EXPECT_EQ(req.start_inputs[m->variableIndex("xr") - m->nd()], 0.6);
  EXPECT_EQ(req.start_text, "rest-of:xr=0.6,r=0.5");
  EXPECT_TRUE(req.start.from_rest);
  v1::Start unknown;
  (*unknown.mutable_input_values())["nope"] = 1.0;
  EXPECT_THROW(wire::applyStart(*m, unknown, req), wire::RequestError);
}

TEST(Service, LibraryComplaintsGoToTheLogOfTheNewestServerRunning) {
  // libprotobuf's own messages become JSON events; with two servers in one process, those of the
  // one still running once the newer is gone (it used to keep a pointer to the freed log).
  Running older;
  {
    Running newer;
    GOOGLE_LOG(WARNING) << "first complaint";
    EXPECT_NE(newer.sink.text().find("first complaint"), std::string::npos);
  }
  GOOGLE_LOG(WARNING) << "second complaint";
  const std::string text = older.sink.text();
  EXPECT_EQ(text.find("first complaint"), std::string::npos) << text;
  EXPECT_NE(text.find("\"event\": \"protobuf\""), std::string::npos) << text;
  EXPECT_NE(text.find("second complaint"), std::string::npos) << text;
}

TEST(Service, SimulateWarnsOfInputsFasterThanTheRigCanFollow) {
  Running s;
  const ModelPtr m = loadModel("planar-arm");
  const double max_speed = m->kinematic[m->variableIndex("x") - m->nd()].max_speed;
  for (const double speed : {0.5 * max_speed, 6.0 * max_speed}) {
    v1::SimulateRequest r;
    r.mutable_model()->set_name("planar-arm");
    r.mutable_inputs()->add_variables("x");
    r.mutable_inputs()->set_rate_hz(50.0);
    for (int i = 0; i < 6; ++i) r.mutable_inputs()->add_values(0.3 + speed * i / 50.0);
    grpc::ClientContext ctx;
    v1::SimulateResponse out;
    ASSERT_TRUE(s.stub->Simulate(&ctx, r, &out).ok());
    if (speed < max_speed) {
      EXPECT_EQ(out.warnings_size(), 0);
    } else {
      ASSERT_EQ(out.warnings_size(), 1);
      EXPECT_NE(out.warnings(0).find("column 'x' moves at "), std::string::npos) << out.warnings(0);
      EXPECT_NE(out.warnings(0).find("max_speed"), std::string::npos) << out.warnings(0);
    }
  }
}

// Where named points are, for a client choosing a point goal: the suspended mass hangs its
// string's length (0.5 m) below the robot (on its track at z = 1 m) at rest.
TEST(Service, NamedPointsAreGivenInStageCoordinates) {
  Running s;
  v1::DescribeModelRequest d;
  d.mutable_model()->set_name("suspended-mass");
  grpc::ClientContext c1;
  v1::ModelDescription desc;
  ASSERT_TRUE(s.stub->DescribeModel(&c1, d, &desc).ok());
  ASSERT_EQ(desc.points_size(), 2);
  EXPECT_EQ(desc.points(0).name(), "mass");
  EXPECT_NEAR(desc.points(0).rest_position_m().x(), 0.0, 1e-9);
  EXPECT_NEAR(desc.points(0).rest_position_m().z(), 0.5, 1e-9);
  EXPECT_NEAR(desc.points(1).rest_position_m().z(), 1.0, 1e-12);

  // Simulate gives them per sample: the robot point follows its input xr exactly, and the mass
  // starts where DescribeModel said.
  v1::SimulateRequest r;
  r.mutable_model()->set_name("suspended-mass");
  r.set_with_points(true);
  r.mutable_inputs()->add_variables("xr");
  r.mutable_inputs()->set_rate_hz(50.0);
  for (int i = 0; i < 26; ++i) r.mutable_inputs()->add_values(0.2 * std::sin(M_PI * i / 25.0));
  grpc::ClientContext c2;
  v1::SimulateResponse out;
  ASSERT_TRUE(s.stub->Simulate(&c2, r, &out).ok());
  ASSERT_GT(out.samples_size(), 25);
  for (const v1::SimulationSample& sample : out.samples()) {
    ASSERT_EQ(sample.points_m_size(), 2);
    EXPECT_NEAR(sample.points_m(1).x(), sample.inputs(0), 1e-12) << "t " << sample.t_s();
    EXPECT_NEAR(sample.points_m(1).z(), 1.0, 1e-12);
  }
  EXPECT_NEAR(out.samples(0).points_m(0).z(), desc.points(0).rest_position_m().z(), 1e-9);
  // Point positions are bounded as samples are: puppetcopter's 11 points over 200,000 steps are
  // more than a request may ask for (refused before anything runs).
  {
    v1::SimulateRequest big;
    big.mutable_model()->set_name("puppetcopter");
    big.set_with_points(true);
    big.set_dt_s(0.001);
    big.set_duration_s(200.0);
    expectSimulateRefused(s, big, "with_points: 200000 steps of ");
  }
  // Without with_points, none.
  r.set_with_points(false);
  grpc::ClientContext c3;
  ASSERT_TRUE(s.stub->Simulate(&c3, r, &out).ok());
  EXPECT_EQ(out.samples(0).points_m_size(), 0);
}

TEST(Service, InputSamplesAreBoundedBeforeTheyAreAllocated) {
  // One variable's column, expanded to a row of all 21 kinematic variables per sample: a
  // 4 MB message would ask for 84 MB without the bound of 10^7 values per schedule.
  const ModelPtr m = loadModel("marionette25");
  const int max_rows = InputSchedule::maxRows(*m);
  EXPECT_EQ(max_rows, static_cast<int>(InputSchedule::kMaxCells / m->nk()));
  EXPECT_EQ(InputSchedule::maxRows(*loadModel("planar-arm")), InputSchedule::kMaxRows);
  v1::InputSequence in;
  in.add_variables(m->kinematic[0].name);
  in.set_rate_hz(1000.0);
  for (int i = 0; i <= max_rows; ++i) in.add_values(m->kinematic[0].default_value);
  try {
    wire::inputsFromProto(*m, in);
    ADD_FAILURE() << "a schedule of " << max_rows + 1 << " samples was accepted";
  } catch (const wire::RequestError& e) {
    EXPECT_NE(std::string(e.what()).find("at most " + std::to_string(max_rows)), std::string::npos)
        << e.what();
  }
  in.mutable_values()->RemoveLast();  // exactly the bound: accepted
  EXPECT_EQ(wire::inputsFromProto(*m, in).times_s.size(), static_cast<std::size_t>(max_rows));
}

}  // namespace
}  // namespace marionette
