// SPDX-License-Identifier: BSD-3-Clause
// The plan file (plan/plan_file.hpp) read back: every number the double that was written, the
// plan re-simulated from its own file following its predicted states, and errors that name the
// file and the field.
#include <gtest/gtest.h>

#include <string>

#include "marionette/environments/scene.hpp"
#include "marionette/environments/scene_contacts.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/plan/plan_file.hpp"
#include "support/test_plans.hpp"

namespace marionette {
namespace {

using testing::planText;
using testing::tablePlan;

TEST(PlanFile, ReadsBackWhatWasWritten) {
  const Plan& plan = tablePlan();
  ASSERT_EQ(plan.outcome, PlanOutcome::Exact) << plan.message;
  const Plan back = readPlanJson(planText(plan), "plan.json");
  EXPECT_EQ(back.model, "puppetcopter");
  EXPECT_EQ(back.scene, "table");
  EXPECT_EQ(back.goal, plan.goal);
  EXPECT_EQ(back.stats.planner, "rrt");
  EXPECT_EQ(back.outcome, PlanOutcome::Exact);
  EXPECT_EQ(back.seed, 1u);
  EXPECT_TRUE(back.collision_free);
  EXPECT_EQ(back.rate_hz, plan.rate_hz);
  EXPECT_EQ(back.input_names, plan.input_names);
  EXPECT_EQ(back.predicted.string_names, plan.predicted.string_names);
  EXPECT_EQ(back.goal_sample, plan.goal_sample);
  EXPECT_EQ(back.first_collision, -1);
  EXPECT_EQ(back.min_stage_clearance_sample, plan.min_stage_clearance_sample);
  // Seventeen significant digits in the file: every number is the double that was written,
  // so the inputs a reader plays are exactly the verified ones.
  EXPECT_EQ(back.inputs, plan.inputs);
  EXPECT_EQ(back.predicted.states, plan.predicted.states);
  EXPECT_EQ(back.predicted.tensions_N, plan.predicted.tensions_N);
  EXPECT_EQ(back.predicted.clearance_m, plan.predicted.clearance_m);
  EXPECT_EQ(back.min_clearance_m, plan.min_clearance_m);
  ASSERT_TRUE(plan.quality.measured);
  EXPECT_TRUE(back.quality.measured);
  EXPECT_EQ(back.quality.input_jerk_rms, plan.quality.input_jerk_rms);
  EXPECT_EQ(back.quality.string_catches, plan.quality.string_catches);
  EXPECT_EQ(back.quality.peak_tension_ratio, plan.quality.peak_tension_ratio);
  EXPECT_EQ(back.quality.peak_tension_string, plan.quality.peak_tension_string);
  EXPECT_EQ(back.quality.residual_joint_speed_rms, plan.quality.residual_joint_speed_rms);
  // Snaps (0 on this plan: written as another count to see it read back), and a file from before
  // they were counted.
  EXPECT_EQ(back.quality.peak_tension_t_s, plan.quality.peak_tension_t_s);
  EXPECT_FALSE(plan.quality.swing_joint.empty());
  EXPECT_EQ(back.quality.swing_joint, plan.quality.swing_joint);
  EXPECT_EQ(back.quality.swing_joint_speed_rms, plan.quality.swing_joint_speed_rms);
  Plan snapped = plan;
  snapped.quality.snaps = 3;
  snapped.quality.first_snap_string = "string_x";
  snapped.quality.first_snap_t_s = 0.84;
  const std::string snapped_text = planText(snapped);
  const Plan snapped_back = readPlanJson(snapped_text, "plan.json");
  EXPECT_EQ(snapped_back.quality.snaps, 3);
  EXPECT_EQ(snapped_back.quality.first_snap_string, "string_x");
  EXPECT_EQ(snapped_back.quality.first_snap_t_s, 0.84);
  const std::string key = "\"snaps\": 3,";
  ASSERT_NE(snapped_text.find(key), std::string::npos);
  std::string older = snapped_text;
  older.erase(older.find(key), key.size());
  EXPECT_EQ(readPlanJson(older, "plan.json").quality.snaps, 0);
  EXPECT_EQ(back.quality.residual_kinetic_energy_J, plan.quality.residual_kinetic_energy_J);
  EXPECT_EQ(back.min_stage_clearance_m, plan.min_stage_clearance_m);
  // Contact forces: the plan's own, and two pairs written to see them read back.
  EXPECT_EQ(back.predicted.contact_names, plan.predicted.contact_names);
  EXPECT_EQ(back.predicted.contact_normal_N, plan.predicted.contact_normal_N);
  Plan touching = plan;
  touching.predicted.contact_names = {"floor/foot_l_0", "body/hand_l_0"};
  touching.predicted.contact_normal_N = Eigen::MatrixXd::Random(plan.samples(), 2).cwiseAbs();
  touching.predicted.contact_friction_N = 0.3 * touching.predicted.contact_normal_N;
  const Plan touched = readPlanJson(planText(touching), "plan.json");
  EXPECT_EQ(touched.predicted.contact_names, touching.predicted.contact_names);
  EXPECT_EQ(touched.predicted.contact_normal_N, touching.predicted.contact_normal_N);
  EXPECT_EQ(touched.predicted.contact_friction_N, touching.predicted.contact_friction_N);
  // Re-simulated from its own file with its scene's contacts (whatever it touched, it touches
  // again), the plan follows its predicted states to rounding (with 12 digits a 5.8 s plan
  // drifted 3e-5 rad).
  int row = 0;
  double drift = 0.0;
  const ModelPtr pc = loadModel("puppetcopter");
  SimulationOptions again = planSimulation(back);
  again.contacts = sceneContacts(*pc, *loadScene("table"));
  simulate(pc, planInputs(back), again, [&](const SimulationRow& r) {
    drift = std::max(drift,
                     (*r.q - back.predicted.states.row(row++).transpose()).cwiseAbs().maxCoeff());
    return true;
  });
  EXPECT_EQ(row, back.samples());
  EXPECT_LT(drift, 1e-12);
}

TEST(PlanFile, ATruncatedFileIsAClearError) {
  const std::string text = planText(tablePlan());
  try {
    readPlanJson(text.substr(0, text.size() / 2), "cut.json");
    FAIL() << "a truncated plan was read";
  } catch (const PlanFileError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("cut.json:", 0), 0u) << what;
    EXPECT_NE(what.find("truncated"), std::string::npos) << what;
  }
}

TEST(PlanFile, ErrorsNameTheField) {
  std::string text = planText(tablePlan());
  const auto expectError = [](const std::string& t, const std::string& field) {
    try {
      readPlanJson(t, "p.json");
      FAIL() << "no error for " << field;
    } catch (const PlanFileError& e) {
      EXPECT_NE(std::string(e.what()).find("p.json: " + field), std::string::npos) << e.what();
    }
  };
  expectError("{\"format\": \"something-else\"}", "format");
  std::string bad = text;
  bad.replace(bad.find("\"rate_hz\": 50"), 13, "\"rate_hz\": -1");
  expectError(bad, "inputs.rate_hz");
  bad = text;
  // One row of states short.
  const std::size_t states = bad.find("\"states\": [");
  const std::size_t row_end = bad.find("],", bad.find('[', states + 11));
  bad.erase(bad.find('[', states + 11), row_end + 2 - bad.find('[', states + 11));
  expectError(bad, "predicted.states");
  // A contact force that pulls.
  Plan pulling = tablePlan();
  pulling.predicted.contact_names = {"floor/foot_l_0"};
  pulling.predicted.contact_normal_N = Eigen::MatrixXd::Zero(pulling.samples(), 1);
  pulling.predicted.contact_friction_N = pulling.predicted.contact_normal_N;
  pulling.predicted.contact_normal_N(3, 0) = -0.5;
  expectError(planText(pulling), "predicted.contact_normal_N");
  // A seed beyond what a double holds exactly: an error, not an undefined cast (found by fuzzing).
  bad = text;
  const std::size_t seed = bad.find("\"seed\": ");
  bad.replace(seed, bad.find(',', seed) - seed, "\"seed\": 1777777777777777777777777777");
  expectError(bad, "seed");
}

}  // namespace
}  // namespace marionette
