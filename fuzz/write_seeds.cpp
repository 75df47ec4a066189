// SPDX-License-Identifier: BSD-3-Clause
// Writes the generated part of the fuzz targets' seed corpus into DIR/<target>/: a plan file, a
// roadmap file, a rig file, protocol lines, and requests of every RPC (built-in and inline
// models and scenes).  The built-in model, scene and CSV files are copied by scripts/fuzz.sh.
//   write_seeds DIR MODELS_DIR SCENES_DIR
#include <filesystem>
#include <fstream>
#include <iostream>

#include "marionette/executor/protocol.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/plan/plan_file.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/search/roadmap.hpp"
#include "marionette/v1/planner.pb.h"

namespace fs = std::filesystem;
using namespace marionette;

namespace {

std::string dir;

void write(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir + "/" + target);
  std::ofstream(dir + "/" + target + "/" + name, std::ios::binary) << bytes;
}

std::string fileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: write_seeds DIR MODELS_DIR SCENES_DIR\n";
    return 2;
  }
  dir = argv[1];
  const std::string models_dir = argv[2], scenes_dir = argv[3];

  // A plan, and the roadmap its planner's folder would hold.
  const ModelPtr arm = loadModel("planar-arm");
  PlanRequest request;
  request.model = arm;
  request.goal = GoalSpec::parse("q:theta1=0.3;tol=0.1");
  request.options.planner = "rrt";
  request.options.time_limit_s = 10;
  request.options.output_rate_hz = 4;  // a short file: the target's executions stay fast
  std::ostringstream plan;
  writePlanJson(planMotion(request), plan);
  write("plan_json", "planar-arm.json", plan.str());
  RoadmapOptions roadmap_options;
  roadmap_options.vertices = 4;
  const auto collision = std::make_shared<CollisionModel>(arm, loadScene("empty"));
  std::ostringstream roadmap;
  const std::string roadmap_path = dir + "/planar-arm.roadmap.tmp";
  RestPoseRoadmap::build(collision, roadmap_options)->save(roadmap_path);
  write("roadmap_file", "planar-arm.roadmap", fileText(roadmap_path));
  fs::remove(roadmap_path);

  // Contact-rich scenes (a model byte, then the scene): the built-in ones under each puppet, 1,000
  // stacked planes (the scene that took the server to 7 GB) and 64 coincident ones (the most a
  // scene may let the puppet touch).
  for (const char* scene : {"empty", "table", "window", "pillars"})
    for (const char model : {'0', '1'})
      write("contact_scene", std::string(scene) + "-" + model,
            model + fileText(scenes_dir + "/" + scene + ".yaml"));
  const std::string plane =
      "  - {name: p{i}, plane: {normal: [0, 0, 1], offset: 0.0{i}}, contact: true}\n";
  write("contact_scene", "stacked-1000", "1name: stacked\nobstacles:\nrepeat: 1000\n" + plane);
  write("contact_scene", "coincident-64",
        "0name: coincident\nobstacles:\nrepeat: 64\n"
        "  - {name: p{i}, plane: {normal: [0, 0, 1], offset: 0.2}, contact: true}\n");
  // Model limits: x's range, max_speed and max_accel, then L's; 1 mm/s winches and slower, hour-
  // long moves refused at load, and the slowest legal ones.
  write("model_limits", "builtin", "-0.4 0.6 0.5 4 0.05 1 0.5 4");
  for (const char* speed : {"1e-6", "1e-5", "1e-3", "0.0032", "0.5"})
    write("model_limits", std::string("speed-") + speed,
          std::string("-0.4 0.6 ") + speed + " 4 0.05 1 " + speed + " 4");
  write("model_limits", "accel-1e-9", "-0.4 0.6 0.5 1e-9");
  write("model_limits", "range-1e300", "-1e300 1e300 0.5 4");

  // A rig file for PuppetCopter, and the protocol's frames.
  const ModelPtr copter = loadModel("puppetcopter");
  std::ostringstream rig;
  rig << "rig: bench\nchannels:\n";
  for (int k = 0; k < copter->nk(); ++k)
    rig << "  " << copter->kinematic[k].name << ": {channel: " << k
        << ", scale: 2.5, offset: 0.1, unit: rad}\n";
  write("rig_file", "puppetcopter.yaml", rig.str());
  const auto identity = executor::RigConfig::identity(*arm);
  write("rig_protocol", "ack", executor::encodeFrame("ACK", 7));
  write("rig_protocol", "nak", executor::encodeFrame("NAK", 8, {"RANGE"}));
  write("rig_protocol", "pos",
        executor::encodeFrame("POS", 9, executor::encodeSetpoints(identity, arm->defaultInputs())));

  // A rig's replies (rig_replies.cpp's rig): its position at the arm's defaults, then an
  // acknowledgement, measurements (one far off, one stamped far ahead, one repeated), a
  // refusal, noise.
  using executor::encodeFrame;
  const std::string measured = "mass.x:0:mm,mass.y:0:mm,mass.z:500:mm,xm:0:mm";
  write("rig_replies", "replies",
        encodeFrame("POS", 1, {"0:0:mm", "1:25:rad"}) + encodeFrame("ACK", 2) +
            encodeFrame("MEA", 1, {"0.0", measured}) + encodeFrame("ACK", 3) +
            encodeFrame("MEA", 2, {"0.1", "mass.x:1e300:mm,mass.y:0:mm,mass.z:500:mm,xm:0:mm"}) +
            encodeFrame("MEA", 3, {"1e300", measured}) + encodeFrame("MEA", 3, {"0.2", measured}) +
            encodeFrame("NAK", 5, {"range"}) + "$ACK,\xff*0000\n" + encodeFrame("ACK", 6));
  write("rig_replies", "far", encodeFrame("POS", 1, {"0:1e12:mm", "1:25:rad"}));

  // Requests: built-in and inline models and scenes, every goal kind, inputs and a start.
  const std::string inline_model = fileText(models_dir + "/suspended-mass.yaml");
  // Primitives only: a request's mesh obstacles cost a BVH build each (the scene_yaml target
  // has the living room's), which would slow these targets' executions twenty-fold.
  const std::string inline_scene = fileText(scenes_dir + "/window.yaml");
  v1::DescribeModelRequest describe;
  describe.mutable_model()->set_name("puppetcopter");
  write("rpc_describe_model", "builtin", describe.SerializeAsString());
  describe.mutable_model()->set_yaml(inline_model);
  write("rpc_describe_model", "inline", describe.SerializeAsString());

  v1::SimulateRequest simulate;
  simulate.mutable_model()->set_name("planar-arm");
  simulate.mutable_scene()->set_name("table");
  simulate.set_dt_s(0.01);
  simulate.set_duration_s(2);
  simulate.set_stop_on_collision(true);
  v1::InputSequence* inputs = simulate.mutable_inputs();
  inputs->add_variables("x");
  inputs->set_rate_hz(2);
  for (double x : {0.3, 0.35, 0.4}) inputs->add_values(x);
  write("rpc_simulate", "builtin", simulate.SerializeAsString());
  simulate.Clear();
  simulate.mutable_model()->set_yaml(inline_model);
  simulate.mutable_scene()->set_yaml(inline_scene);
  (*simulate.mutable_start()->mutable_position_values())["xm"] = 0.01;
  (*simulate.mutable_start()->mutable_input_values())["r"] = 0.45;
  write("rpc_simulate", "inline", simulate.SerializeAsString());

  v1::PlanRequest plan_request;
  plan_request.mutable_model()->set_name("puppetcopter");
  plan_request.mutable_scene()->set_name("table");
  plan_request.set_planner("kpiece");
  (*plan_request.mutable_parameters())["border_fraction"] = "0.7";
  plan_request.set_time_limit_s(5);
  plan_request.set_output_rate_hz(50);
  v1::PointTarget* target = plan_request.mutable_goal()->mutable_points()->add_targets();
  target->set_point("hand_l");
  target->mutable_position_m()->set_x(0.05);
  target->mutable_position_m()->set_y(0.24);
  target->mutable_position_m()->set_z(0.40);
  plan_request.mutable_goal()->set_tolerance(0.04);
  write("rpc_plan", "point", plan_request.SerializeAsString());
  plan_request.Clear();
  plan_request.mutable_model()->set_yaml(inline_model);
  plan_request.mutable_scene()->set_yaml(fileText(scenes_dir + "/window.yaml"));
  plan_request.set_planner("prm");
  (*plan_request.mutable_goal()->mutable_rest_of()->mutable_inputs())["xr"] = 0.4;
  plan_request.mutable_goal()->set_at_rest(true);
  plan_request.mutable_start()->add_inputs(0.0);
  plan_request.mutable_start()->add_inputs(0.5);
  write("rpc_plan", "rest-of", plan_request.SerializeAsString());
  plan_request.Clear();
  plan_request.mutable_model()->set_name("planar-arm");
  (*plan_request.mutable_goal()->mutable_joints()->mutable_values())["theta1"] = 0.3;
  plan_request.set_planner("est");
  (*plan_request.mutable_parameters())["range"] = "2";
  write("rpc_plan", "joints", plan_request.SerializeAsString());

  // Performances, among them what was found holding a worker for minutes: two keyframe
  // clips of an hour, 4,096 tiny clips, a CSV looped 1,000 times, a blend of -1 s.
  const std::string hour =
      "keyframes:\n  - {t: 0, points: {hand_r: {offset: [0, 0, 0]}}}\n"
      "  - {t: 3600, points: {hand_r: {offset: [0.01, 0, 0]}}}\n";
  const std::string tiny =
      "keyframes:\n  - {t: 0, points: {hand_r: {offset: [0, 0, 0]}}}\n"
      "  - {t: 0.1, points: {hand_r: {offset: [0.01, 0, 0]}}}\n";
  auto perform = [](std::vector<std::pair<v1::PerformanceClip::Format, std::string>> clips) {
    v1::PerformRequest r;
    r.mutable_model()->set_name("puppetcopter");
    for (const auto& [format, text] : clips) {
      v1::PerformanceClip* c = r.add_clips();
      c->set_format(format);
      c->set_text(text);
    }
    return r;
  };
  const auto keyframes = v1::PerformanceClip::FORMAT_KEYFRAMES;
  write("rpc_perform", "keyframes", perform({{keyframes, tiny}}).SerializeAsString());
  write("rpc_perform", "hours",
        perform({{keyframes, hour}, {keyframes, hour}}).SerializeAsString());
  write("rpc_perform", "many", perform(std::vector(512, std::make_pair(keyframes, tiny)))
                                   .SerializeAsString());
  std::string rows = "t,hand_r_x,hand_r_y,hand_r_z\n";
  for (int i = 0; i < 200; ++i) rows += std::to_string(i / 2000.0) + ",0.1,0.2,0.5\n";
  v1::PerformRequest looped = perform({{v1::PerformanceClip::FORMAT_MARKERS, rows}});
  looped.set_loop(1000);
  looped.set_blend_s(0.05);
  write("rpc_perform", "looped", looped.SerializeAsString());
  v1::PerformRequest blend = perform({{keyframes, tiny}});
  blend.set_blend_s(-1);
  write("rpc_perform", "blend", blend.SerializeAsString());
  return 0;
}
