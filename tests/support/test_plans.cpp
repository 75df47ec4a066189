// SPDX-License-Identifier: BSD-3-Clause
#include "support/test_plans.hpp"

#include <sstream>

#include "marionette/models/model_io.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/plan/plan_file.hpp"
#include "marionette/planner/planner.hpp"

namespace marionette::testing {

const Plan& tablePlan() {
  static const Plan plan = [] {
    PlanRequest req;
    req.model = loadModel("puppetcopter");
    req.scene = loadScene("table");
    req.options.planner = "rrt";
    req.options.seed = 1;
    req.options.max_propagations = 2'000'000;  // it takes ~3,500
    req.options.time_limit_s = 600;             // a backstop only
    req.goal = GoalSpec::parse("point:hand_l=0.05,0.24,0.40;radius=0.04");
    return planMotion(req);
  }();
  return plan;
}

PlanRequest planRequest(const std::string& model, const std::string& scene,
                        const std::string& planner, const std::string& goal, double time_limit_s,
                        unsigned long seed) {
  PlanRequest req;
  req.model = loadModel(model);
  req.scene = loadScene(scene);
  req.goal = GoalSpec::parse(goal);
  req.options.planner = planner;
  req.options.time_limit_s = time_limit_s;
  // Tree searches are budgeted in integrator steps, not seconds: a test's plan is the same on a
  // loaded machine or under a sanitizer.  The budget is 4x what the hardest of them takes
  // (arm3d behind the pillars, est: ~0.42 M); the time limit is only a backstop that no search
  // here reaches on a working build (a run it ended would fail its test, not pass it).
  req.options.max_propagations = 4'000'000;
  req.options.seed = seed;
  return req;
}

double restValue(const ModelPtr& model, const std::string& variable) {
  const RestPose rest = computeRestPose(model, model->defaultInputs());
  return rest.q[model->variableIndex(variable)];
}

std::string planText(const Plan& plan) {
  std::ostringstream os;
  writePlanJson(plan, os);
  return os.str();
}

}  // namespace marionette::testing
