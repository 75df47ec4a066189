// SPDX-License-Identifier: BSD-3-Clause
#include "support/test_plans.hpp"

#include <sstream>

#include "marionette/models/model_io.hpp"
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

std::string planText(const Plan& plan) {
  std::ostringstream os;
  writePlanJson(plan, os);
  return os.str();
}

}  // namespace marionette::testing
