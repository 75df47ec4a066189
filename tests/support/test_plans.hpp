// SPDX-License-Identifier: BSD-3-Clause
// Real plans the tests share, each made once per process: PuppetCopter's left hand to the
// table's edge (the quick start's problem, rrt, seed 1), budgeted in propagations so that it is
// the same plan on any machine.
#pragma once

#include <string>

#include "marionette/plan/plan.hpp"

namespace marionette::testing {

const Plan& tablePlan();
std::string planText(const Plan& plan);  // the plan file (JSON)

}  // namespace marionette::testing
