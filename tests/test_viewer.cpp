// SPDX-License-Identifier: BSD-3-Clause
// The viewer's data (clients/viewer): what the page draws must be the plan's physics, in stage coordinates, checked independently here --
// strings no longer than their lengths and exactly as long when they pull, FCL's clearance
// equal to the plan's own, named points where the kinematics put them.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "marionette/common/text.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/plan/plan_file.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "marionette/performance/plan_performance.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/viewer/view.hpp"
#include "support/test_paths.hpp"
#include "support/test_plans.hpp"

namespace marionette {
namespace {

using testing::planText;
using testing::tablePlan;
using viewer::Motion;
using viewer::ViewError;

// Two planar-arm plans of one problem that differ in rate and duration: the one shown and the
// one compared with it (`render A.json --compare B.json`).
const Plan& armPlan(unsigned seed, double rate_hz) {
  static std::map<std::pair<unsigned, double>, Plan> plans;
  auto [it, added] = plans.try_emplace({seed, rate_hz});
  if (added) {
    PlanRequest req;
    req.model = loadModel("planar-arm");
    req.scene = loadScene("empty");
    req.options.planner = "est";
    req.options.seed = seed;
    req.options.output_rate_hz = rate_hz;
    req.options.max_propagations = 2'000'000;
    req.options.time_limit_s = 600;  // a backstop only
    req.goal = GoalSpec::parse("q:theta1=0.3");
    it->second = planMotion(req);
  }
  return it->second;
}


YAML::Node viewDocument(const ModelPtr& model, const ScenePtr& scene, const Motion& motion,
                        const viewer::ViewOptions& options = {}) {
  std::ostringstream os;
  viewer::writeViewJson(model, scene, motion, options, os);
  return YAML::Load(os.str());  // JSON is YAML
}

Eigen::Vector3d at3(const YAML::Node& row, int offset) {
  return {row[offset].as<double>(), row[offset + 1].as<double>(), row[offset + 2].as<double>()};
}

// ---- Motions and the view document ---------------------------------------------------------

TEST(ViewerMotion, APlanForAnotherModelIsRefusedByName) {
  const ModelPtr arm = loadModel("planar-arm");
  try {
    viewer::motionOfPlan(tablePlan(), "plan.json", *arm);
    FAIL();
  } catch (const ViewError& e) {
    EXPECT_NE(std::string(e.what()).find("plan.json: model: the plan is for 'puppetcopter', "
                                         "not 'planar-arm'"),
              std::string::npos)
        << e.what();
  }
  // Same name, other variables: a model file that was edited since the plan.
  Plan renamed = tablePlan();
  renamed.model = "planar-arm";
  EXPECT_THROW(viewer::motionOfPlan(renamed, "plan.json", *arm), ViewError);
}

TEST(ViewerDocument, StringsAreNeverLongerThanTheirLengthsAndTautWhenTheyPull) {
  const Plan& plan = tablePlan();
  const ModelPtr model = loadModel("puppetcopter");
  const Motion motion = viewer::motionOfPlan(plan, "plan.json", *model);
  const YAML::Node doc = viewDocument(model, loadScene("table"), motion);
  const int n = plan.samples();
  ASSERT_EQ(static_cast<int>(doc["t"].size()), n);
  ASSERT_EQ(static_cast<int>(doc["string_ends"].size()), n);
  int taut_checked = 0;
  for (int i = 0; i < n; ++i) {
    const YAML::Node ends = doc["string_ends"][i];
    for (int s = 0; s < model->nstrings(); ++s) {
      const double chord = (at3(ends, 6 * s) - at3(ends, 6 * s + 3)).norm();
      const double length = doc["string_lengths"][i][s].as<double>();
      // The view rounds to 7 digits (~1e-7 m).
      EXPECT_LE(chord, length + 1e-6) << "string " << s << " sample " << i;
      if (plan.predicted.tensions_N(i, s) > 1e-3) {
        EXPECT_NEAR(chord, length, 1e-6) << "string " << s << " pulls but is slack, sample " << i;
        ++taut_checked;
      }
      EXPECT_NEAR(doc["tensions"]["samples"][i][s].as<double>(), plan.predicted.tensions_N(i, s),
                  1e-6 * (1.0 + plan.predicted.tensions_N(i, s)));
    }
  }
  EXPECT_GT(taut_checked, n);  // a hanging puppet has several taut strings at every sample
}

TEST(ViewerDocument, ClearanceIsFclsAndEqualsThePlans) {
  const Plan& plan = tablePlan();
  const ModelPtr model = loadModel("puppetcopter");
  const YAML::Node doc =
      viewDocument(model, loadScene("table"), viewer::motionOfPlan(plan, "plan.json", *model));
  const YAML::Node c = doc["clearance"];
  ASSERT_TRUE(c.IsMap());
  ASSERT_EQ(static_cast<int>(c["samples"].size()), plan.samples());
  for (int i = 0; i < plan.samples(); ++i) {
    EXPECT_NEAR(c["samples"][i].as<double>(), plan.predicted.clearance_m[i], 1e-6) << i;
    EXPECT_NEAR(c["stage_samples"][i].as<double>(), plan.predicted.stage_clearance_m[i], 1e-6) << i;
  }
  const int min_index = c["min_index"].as<int>();
  EXPECT_NEAR(plan.predicted.clearance_m[min_index], plan.min_clearance_m, 1e-12);
  EXPECT_EQ(c["stage_min_index"].as<int>(), plan.min_stage_clearance_sample);
  EXPECT_EQ(doc["collision"]["first_index"].as<int>(), -1);
}

TEST(ViewerDocument, PosesAreInStageCoordinatesAndPointsFollowTheKinematics) {
  const Plan& plan = tablePlan();
  const ModelPtr model = loadModel("puppetcopter");
  const Motion motion = viewer::motionOfPlan(plan, "plan.json", *model);
  const YAML::Node doc = viewDocument(model, loadScene("table"), motion);
  DynamicsData data(*model);
  const int hand = model->pointIndex("hand_l");
  const int body_slot = [&] {
    for (std::size_t k = 0; k < doc["frames"].size(); ++k)
      if (doc["frames"][k].as<std::string>() == "body") return static_cast<int>(k);
    return -1;
  }();
  ASSERT_GE(body_slot, 0);
  for (int i : {0, plan.samples() / 2, plan.samples() - 1}) {
    const Eigen::VectorXd q = motion.q.row(i).transpose();
    forwardKinematics(*model, data, q);
    const Eigen::Vector3d hand_stage =
        model->stage_pose *
        pointPosition(data, model->points[hand].frame, model->points[hand].position_m);
    EXPECT_LT((at3(doc["points"][hand]["path"][i], 0) - hand_stage).norm(), 1e-6);
    const YAML::Node pose = doc["frame_poses"][i];
    const Eigen::Vector3d body = at3(pose, 7 * body_slot);
    const Eigen::Vector3d body_stage = model->stage_pose * data.frame_p[model->frameIndex("body")];
    EXPECT_LT((body - body_stage).norm(), 1e-6);
    const Eigen::Quaterniond qb(
        pose[7 * body_slot + 6].as<double>(), pose[7 * body_slot + 3].as<double>(),
        pose[7 * body_slot + 4].as<double>(), pose[7 * body_slot + 5].as<double>());
    EXPECT_NEAR(qb.norm(), 1.0, 1e-6);
    const Eigen::Matrix3d R_stage =
        model->stage_pose.linear() * data.frame_R[model->frameIndex("body")];
    EXPECT_LT((qb.normalized().toRotationMatrix() - R_stage).cwiseAbs().maxCoeff(), 1e-5);
  }
  // Where the plan reaches its goal, the hand is in the goal region the page draws.
  ASSERT_EQ(doc["targets"].size(), 1u);
  ASSERT_GE(plan.goal_sample, 0);
  EXPECT_EQ(doc["goal_index"].as<int>(), plan.goal_sample);
  const Eigen::Vector3d goal = at3(doc["targets"][0]["position"], 0);
  EXPECT_LT((at3(doc["points"][hand]["path"][plan.goal_sample], 0) - goal).norm(),
            doc["targets"][0]["radius"].as<double>());
  EXPECT_EQ(doc["highlight_points"][0].as<std::string>(), "hand_l");
  // The table is drawn where FCL checks it: every obstacle is on the page.
  EXPECT_EQ(doc["obstacles"].size(), loadScene("table")->obstacles.size());
}

TEST(ViewerDocument, RestPoseHasOneSampleWithStaticTensions) {
  for (const std::string name : {"puppetcopter", "planar-arm", "suspended-mass"}) {
    const ModelPtr model = loadModel(name);
    const Motion rest = viewer::motionAtRest(model);
    ASSERT_EQ(rest.q.rows(), 1);
    for (int s = 0; s < model->nstrings(); ++s) EXPECT_GE(rest.tensions_N(0, s), 0.0) << name;
    const YAML::Node doc = viewDocument(model, nullptr, rest);
    EXPECT_TRUE(doc["clearance"].IsNull());
    EXPECT_EQ(doc["obstacles"].size(), 0u);
    EXPECT_EQ(doc["frame_poses"].size(), 1u);
    EXPECT_EQ(doc["links"].size(), model->geometry.size());
  }
  // A mass hanging on one string at rest: the string carries its weight, m g.
  const ModelPtr mass = loadModel("suspended-mass");
  ASSERT_EQ(mass->nstrings(), 1);
  double kg = 0.0;
  for (const auto& m : mass->masses) kg += m.mass_kg;
  EXPECT_NEAR(viewer::motionAtRest(mass).tensions_N(0, 0), kg * mass->gravity_mps2, 1e-9);
}

TEST(ViewerDocument, SimulatedInputsMatchTheSimulator) {
  const ModelPtr mass = loadModel("suspended-mass");
  const InputSchedule inputs =
      InputSchedule::fromCsv(*mass, "t," + mass->kinematic[0].name + "\n0,0\n1,0.1\n", "test.csv");
  const Motion m = viewer::motionOfInputs(mass, inputs, "test.csv", 0.02, 1.5);
  ASSERT_EQ(m.q.rows(), 76);
  EXPECT_DOUBLE_EQ(m.rate_hz, 50.0);
  SimulationOptions o;
  o.dt_s = 0.02;
  o.duration_s = 1.5;
  Eigen::VectorXd last;
  simulate(mass, inputs, o, [&](const SimulationRow& r) {
    last = *r.q;
    return true;
  });
  EXPECT_LT((m.q.row(75).head(mass->nd()).transpose() - last).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_NEAR(m.q(50, mass->nd()), 0.1, 1e-12);  // the input at t = 1 s
}

TEST(ViewerDocument, UnknownTracedPointIsNamed) {
  const ModelPtr model = loadModel("planar-arm");
  viewer::ViewOptions o;
  o.trace_points = {"nose"};
  std::ostringstream os;
  try {
    viewer::writeViewJson(model, nullptr, viewer::motionAtRest(model), o, os);
    FAIL();
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "trace_points");
    EXPECT_NE(e.problem().find("'nose' is not a named point of 'planar-arm'"), std::string::npos)
        << e.what();
  }
}

TEST(ViewerDocument, APerformancesTargetsAreWrittenPerSampleBesideItsPoints) {
  // The suspended mass 4 cm aside in 2 s: its target track, and the hold after it without one.
  PerformanceRequest req;
  req.model = loadModel("suspended-mass");
  req.targets.source = "test";
  req.targets.times_s = {0.0, 2.0};
  req.targets.points = {"mass"};
  req.targets.positions_m.resize(2, 3);
  req.targets.positions_m << 0, 0, 0.5, 0.04, 0, 0.5;
  req.options.dynamics = false;
  const Plan plan = planPerformance(req);
  const Motion m = viewer::motionOfPlan(plan, "perf.json", *req.model);
  EXPECT_EQ(m.performance_points, std::vector<std::string>{"mass"});
  EXPECT_NE(std::find(m.trace_points.begin(), m.trace_points.end(), "mass"), m.trace_points.end());
  std::map<std::string, std::string> quality(m.quality.begin(), m.quality.end());
  EXPECT_EQ(quality.count("tracking mass rms"), 1u);
  const YAML::Node doc = viewDocument(req.model, loadScene("empty"), m);
  const YAML::Node samples = doc["performance"]["samples"];
  ASSERT_EQ(doc["performance"]["names"][0].as<std::string>(), "mass");
  ASSERT_EQ(static_cast<Eigen::Index>(samples.size()), plan.performance.targets.positions_m.rows());
  ASSERT_LE(static_cast<int>(samples.size()), plan.samples());
  for (std::size_t i = 0; i < samples.size(); i += 10)
    EXPECT_TRUE(at3(samples[i], 0)
                    .isApprox(plan.performance.targets.position(static_cast<int>(i), 0), 1e-9))
        << "sample " << i;
  // 1 s: halfway along the straight track (linear interpolation of two frames).
  EXPECT_NEAR(at3(samples[static_cast<int>(plan.rate_hz)], 0).x(), 0.02, 1e-9);
  // A plan that is not a performance writes none.
  const YAML::Node plain = viewDocument(loadModel("planar-arm"), loadScene("empty"),
                                        viewer::motionOfPlan(armPlan(1, 50), "a.json",
                                                             *loadModel("planar-arm")));
  EXPECT_EQ(plain["performance"]["names"].size(), 0u);
}

TEST(ViewerMotion, APlansNameIsItsFileNameAndItsQualityFiguresAreItsOwn) {
  const Plan& plan = armPlan(1, 50);
  ASSERT_TRUE(plan.quality.measured);
  const Motion m = viewer::motionOfPlan(plan, "runs/raw.json", *loadModel("planar-arm"));
  EXPECT_EQ(m.name, "raw.json");
  std::map<std::string, std::string> quality(m.quality.begin(), m.quality.end());
  EXPECT_EQ(quality["string catches"], std::to_string(plan.quality.string_catches));
  std::ostringstream jerk, ratio;
  jerk.precision(3);
  jerk << plan.quality.input_jerk_rms_overall << " /s³";
  EXPECT_EQ(quality["input jerk rms"], jerk.str());
  ratio.precision(3);
  ratio << "×" << plan.quality.peak_tension_ratio << " (" << plan.quality.peak_tension_string
        << " at " << formatted("%.2f", plan.quality.peak_tension_t_s) << " s)";
  EXPECT_EQ(quality["peak tension / static"], ratio.str());
  ASSERT_GT(plan.quality.snaps, 0);  // EST's swing snaps the string: the first one is named
  EXPECT_EQ(quality["snaps"], std::to_string(plan.quality.snaps) + " (the first: " +
                                  plan.quality.first_snap_string + " at " +
                                  formatted("%.2f", plan.quality.first_snap_t_s) + " s)");
  EXPECT_NE(quality["joint speed rms after a 1 s hold"].find("(most: " +
                                                             plan.quality.swing_joint + ", "),
            std::string::npos);
  // A plan file from before quality was measured has no figures to show.
  Plan old = plan;
  old.quality = PlanQuality{};
  EXPECT_TRUE(viewer::motionOfPlan(old, "old.json", *loadModel("planar-arm")).quality.empty());
}

TEST(ViewerMotion, AnExactPlanThatWouldNotStageSaysWhyAsPlanPrintsIt) {
  const ModelPtr arm = loadModel("planar-arm");
  Plan snapping = armPlan(1, 50);
  ASSERT_GT(snapping.quality.snaps, 0);
  snapping.outcome = PlanOutcome::Exact;
  snapping.message.clear();
  snapping.limit_violations.clear();
  const std::vector<std::string> shortfalls = stageShortfalls(snapping);
  ASSERT_FALSE(shortfalls.empty());
  EXPECT_EQ(viewer::motionOfPlan(snapping, "a.json", *arm).problems,
            std::vector<std::string>{"not stage-worthy: " + joinNames(shortfalls, "; ")});
  // Calm, clear and without a snap: nothing to say.
  Plan calm = snapping;
  calm.quality.snaps = 0;
  calm.quality.peak_tension_ratio = 1.0;
  calm.quality.residual_joint_speed_rms = 0.0;
  calm.min_clearance_m = calm.min_stage_clearance_m = 0.1;
  ASSERT_TRUE(stageShortfalls(calm).empty());
  EXPECT_TRUE(viewer::motionOfPlan(calm, "a.json", *arm).problems.empty());
}

TEST(ViewerDocument, AComparedPlanIsWrittenAsItsOwnDocumentWouldBe) {
  const ModelPtr model = loadModel("planar-arm");
  const ScenePtr scene = loadScene("empty");
  const Plan& a = armPlan(1, 50);
  const Plan& b = armPlan(2, 25);
  ASSERT_NE(a.samples(), b.samples());
  const Motion shown = viewer::motionOfPlan(a, "a.json", *model);
  const Motion compared = viewer::motionOfPlan(b, "b.json", *model);
  viewer::ViewOptions options;
  options.compare = &compared;
  const YAML::Node doc = viewDocument(model, scene, shown, options);
  const YAML::Node c = doc["compare"];
  ASSERT_TRUE(c.IsMap());
  EXPECT_EQ(doc["name"].as<std::string>(), "a.json");
  EXPECT_EQ(c["name"].as<std::string>(), "b.json");
  // The shown plan stays at the top level, untouched by the compared one.
  ASSERT_EQ(static_cast<int>(doc["t"].size()), a.samples());
  EXPECT_NEAR(doc["tensions"]["samples"][a.samples() - 1][0].as<double>(),
              a.predicted.tensions_N(a.samples() - 1, 0), 1e-6);
  // The compared plan: its own rate, times, inputs, tensions and FCL clearance ...
  ASSERT_EQ(static_cast<int>(c["t"].size()), b.samples());
  EXPECT_EQ(c["rate_hz"].as<double>(), 25.0);
  EXPECT_NEAR(c["t"][b.samples() - 1].as<double>(), b.duration_s(), 1e-9);
  for (int i = 0; i < b.samples(); ++i) {
    for (int k = 0; k < model->nk(); ++k)
      EXPECT_NEAR(c["inputs"]["samples"][i][k].as<double>(), b.inputs(i, k), 1e-6) << i;
    EXPECT_NEAR(c["tensions"]["samples"][i][0].as<double>(), b.predicted.tensions_N(i, 0),
                1e-6 * (1 + b.predicted.tensions_N(i, 0)))
        << i;
    EXPECT_NEAR(c["clearance"]["samples"][i].as<double>(), b.predicted.clearance_m[i], 1e-6) << i;
  }
  // ... and its poses: link 1 turns by theta1 about y, exactly as b's predicted states say.
  for (int i = 0; i < b.samples(); ++i) {
    const YAML::Node pose = c["frame_poses"][i];
    const double angle = 2 * std::atan2(pose[4].as<double>(), pose[6].as<double>());
    EXPECT_NEAR(angle, b.predicted.states(i, 0), 1e-6) << i;
  }
  // Member for member what b's own document holds.
  const YAML::Node alone = viewDocument(model, scene, compared);
  EXPECT_TRUE(alone["compare"].IsNull());
  for (const char* key : {"frame_poses", "string_ends", "string_lengths", "points"})
    EXPECT_EQ(YAML::Dump(c[key]), YAML::Dump(alone[key])) << key;
  EXPECT_EQ(YAML::Dump(c["quality"]), YAML::Dump(alone["quality"]));
  EXPECT_EQ(c["goal_index"].as<int>(), b.goal_sample);
}

TEST(ViewerDocument, AComparedMotionOfTheWrongSizeIsNamed) {
  const ModelPtr model = loadModel("planar-arm");
  Motion other = viewer::motionAtRest(loadModel("arm3d"));
  other.name = "arm3d.json";
  viewer::ViewOptions options;
  options.compare = &other;
  std::ostringstream os;
  try {
    viewer::writeViewJson(model, nullptr, viewer::motionAtRest(model), options, os);
    FAIL();
  } catch (const ViewError& e) {
    EXPECT_NE(std::string(e.what()).find("arm3d.json: its sizes do not fit 'planar-arm'"),
              std::string::npos)
        << e.what();
  }
}

TEST(ViewerPage, IsSelfContainedAndItsDataParses) {
  const ModelPtr model = loadModel("puppetcopter");
  std::ostringstream os;
  viewer::writeViewPage(model, loadScene("table"),
                        viewer::motionOfPlan(tablePlan(), "plan.json", *model), {}, os);
  const std::string page = os.str();
  // Nothing fetched from anywhere: no src= or href= to other files, no http(s) URL in a tag.
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link "), std::string::npos);
  EXPECT_EQ(page.find("@VIEWER_JS@"), std::string::npos);
  EXPECT_EQ(page.find("@VIEW_DATA@"), std::string::npos);
  // three.js is in it (its licence notice is kept).
  EXPECT_NE(page.find("Three.js Authors"), std::string::npos);
  // The inline document ends where its script element does and parses.
  const std::string open = "<script type=\"application/json\" id=\"marionette-view\">";
  const std::size_t begin = page.find(open) + open.size();
  const std::size_t end = page.find("</script>", begin);
  const YAML::Node doc = YAML::Load(page.substr(begin, end - begin));
  EXPECT_EQ(doc["format"].as<std::string>(), "marionette-view");
  // Exactly two script elements: the data and the viewer.
  std::size_t scripts = 0;
  for (std::size_t p = page.find("<script"); p != std::string::npos;
       p = page.find("<script", p + 1))
    ++scripts;
  EXPECT_EQ(scripts, 2u);
}

}  // namespace
}  // namespace marionette
