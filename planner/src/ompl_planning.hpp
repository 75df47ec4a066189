// SPDX-License-Identifier: BSD-3-Clause
// Internal: the OMPL control-planning glue (state space, controls, propagator, validity, goal,
// projection) and the search with one of OMPL's tree planners.
#pragma once

#include <ompl/base/Planner.h>
#include <ompl/control/SpaceInformation.h>

#include <map>
#include <string>

#include "motion_search.hpp"

namespace marionette::detail {

// Constructs one of OMPL's control planners (with the table's goal bias); kept in the planner
// table next to the planner's name (planners.cpp).
using TreePlannerFactory = ompl::base::PlannerPtr (*)(const ompl::control::SpaceInformationPtr&,
                                                      const PlannerInfo&);
TreePlannerFactory treePlannerFactory(const PlannerInfo& info);  // nullptr for the roadmap

std::map<std::string, std::string> treePlannerParameters(const PlannerInfo& info);
// FieldError("options.params[\"NAME\"]") for a parameter the planner does not have or a value it
// refuses, tried on a throwaway planner.
void checkTreePlannerParameters(const PlannerInfo& info,
                                const std::map<std::string, std::string>& params);

// The search settings that are ours, not the OMPL planner's: control durations (integration
// steps) and the projection's cell size along a goal point (m).
struct TreeSearchSettings {
  int min_control_steps = 2, max_control_steps = 15;
  double point_cell_m = 0.05;
};
TreeSearchSettings treeSearchSettings(const PlannerOptions& options);

// The tree search: OMPL's planner over the integrator.  Throws FieldError for an unknown
// parameter, PlanCancelled when cancelled.
SearchResult searchTree(const SearchProblem& problem);

}  // namespace marionette::detail
