// SPDX-License-Identifier: BSD-3-Clause
// The planners, listed once: every name the CLI, the service, the benchmarks and the docs know
// comes from this table.
//
// Contents
//   SearchKind      a tree search with OMPL over the integrator, or the rest-pose roadmap.
//   PlannerInfo     name, kind, how OMPL's benchmark logs call it, its source, control holding.
//   plannerTable() / findPlanner() / plannerNames()
//   plannerParameters()   a planner's OMPL parameters and their defaults as set here (goal_bias
//                         from the table, the others OMPL's).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace marionette {

enum class SearchKind { Tree, Roadmap };

struct PlannerInfo {
  std::string name;  // "est"
  SearchKind kind = SearchKind::Tree;
  std::string log_name;  // in OMPL benchmark logs: "control_EST", "marionette_RestPosePRM"
  std::string source;    // the algorithm, with its paper
  // Tree planners: a control is held for 2..max_control_steps integration steps by default,
  // and the projection's cell along a goal point is point_cell_m (see PlannerOptions).
  int max_control_steps = 15;
  double point_cell_m = 0.05;
  // Tree planners: the fraction of expansions that head for the goal (OMPL's goal_bias), as in
  // the EST of Johnson & Murphey, ICRA 2007.
  double goal_bias = 0.1;
};

const std::vector<PlannerInfo>& plannerTable();
const PlannerInfo* findPlanner(const std::string& name);  // nullptr if unknown
std::vector<std::string> plannerNames();                  // in table order
// OMPL's parameter names of a tree planner and their defaults as set here (goal_bias 0.1);
// empty for the roadmap.  FieldError("options.planner", ...) for an unknown name.
std::map<std::string, std::string> plannerParameters(const std::string& planner);

}  // namespace marionette
