// SPDX-License-Identifier: BSD-3-Clause
// Real plans the tests share, each made once per process: PuppetCopter's left hand to the
// table's edge (the quick start's problem, rrt, seed 1), budgeted in propagations so that it is
// the same plan on any machine; and the requests the planner tests make.
#pragma once

#include <string>

#include "marionette/plan/plan.hpp"
#include "marionette/planner/planner.hpp"

namespace marionette::testing {

// A request of a built-in model and scene, budgeted in propagations (see test_plans.cpp), with
// no roadmap store: a prm request builds its own roadmap, so no test depends on what another
// one's queries found (the roadmap tests give requests their own store).
PlanRequest planRequest(const std::string& model, const std::string& scene,
                        const std::string& planner, const std::string& goal,
                        double time_limit_s = 600.0, unsigned long seed = 1);
// The value of `variable` in the model's rest pose at its default inputs.
double restValue(const ModelPtr& model, const std::string& variable);

const Plan& tablePlan();
std::string planText(const Plan& plan);  // the plan file (JSON)

}  // namespace marionette::testing
