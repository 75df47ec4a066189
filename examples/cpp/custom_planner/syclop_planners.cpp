// SPDX-License-Identifier: BSD-3-Clause
// A planner plugin: OMPL's Syclop planners (Plaku, Kavraki & Vardi, "Motion Planning With
// Dynamics by a Synergistic Combination of Layers of Planning", IEEE T-RO 2010) over a grid of
// the search's projection, registered as "syclop-rrt" and "syclop-est".  custom_planner links
// it; marionette-server --plugin and marionette plan|bench --plugin load it.
#include <ompl/control/planners/syclop/SyclopEST.h>
#include <ompl/control/planners/syclop/SyclopRRT.h>

#include "marionette/search/decomposition.hpp"
#include "marionette/search/registry.hpp"

namespace mt = marionette;

template <class Syclop>
void registerSyclop(const std::string& name, const std::string& log_name) {
  mt::PlannerInfo info;
  info.name = name;
  info.log_name = log_name;  // its name in OMPL's logs and Planner Arena
  info.source = "Syclop (Plaku, Kavraki & Vardi, IEEE T-RO 2010)";
  // Syclop leads its tree to the decomposition's regions of goal states: a point goal's come
  // from the search (rest states that meet it), joint goals' from their own samples.
  info.goal_states = 4;
  mt::registerPlanner(info, [](const mt::TreeSearchSpace& space, const mt::PlannerInfo&) {
    return std::make_shared<Syclop>(space.spaceInformation(), mt::projectionGrid(space, 10));
  });
}

extern "C" void marionette_register_planners() {
  registerSyclop<ompl::control::SyclopRRT>("syclop-rrt", "control_SyclopRRT");
  registerSyclop<ompl::control::SyclopEST>("syclop-est", "control_SyclopEST");
}
