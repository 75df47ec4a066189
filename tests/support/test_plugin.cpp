// SPDX-License-Identifier: BSD-3-Clause
// A planner plugin for the tests (search/plugin.hpp): OMPL's control RRT as "plugin-rrt", made as
// the built-in rrt is made.
#include <ompl/control/planners/rrt/RRT.h>

#include "marionette/search/registry.hpp"
#include "marionette/search/search_space.hpp"

extern "C" void marionette_register_planners() {
  marionette::PlannerInfo info;
  info.name = "plugin-rrt";
  info.source = "OMPL's control RRT, from the tests' plugin";
  marionette::registerPlanner(info, [](const marionette::TreeSearchSpace& space,
                                       const marionette::PlannerInfo& p) {
    auto rrt = std::make_shared<ompl::control::RRT>(space.spaceInformation());
    rrt->setGoalBias(p.goal_bias);
    return rrt;
  });
}
