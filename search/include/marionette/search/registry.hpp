// SPDX-License-Identifier: BSD-3-Clause
// The planners, by name: the built-in ones and those a program registers.  Every name the CLI,
// the service, the benchmarks and the docs know comes from this registry.
//
// Contents
//   SearchKind          a tree search with OMPL over the integrator, or the rest-pose roadmap.
//   PlannerInfo         name, kind, how OMPL's benchmark logs call it, its source, defaults.
//   TreePlannerFactory  makes an OMPL control planner on a TreeSearchSpace (search_space.hpp).
//   registerPlanner()   adds a tree planner under a new name; from then on the planner pipeline,
//                       the benchmark, its OMPL logs, the CLI and the service accept it.
//   plannerTable() / findPlanner() / plannerNames()   what is registered, in order.
//   plannerParameters() / checkPlannerParameters()    a planner's OMPL parameters.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace ompl::base {
class Planner;
}

namespace marionette {

class TreeSearchSpace;

enum class SearchKind { Tree, Roadmap };

struct PlannerInfo {
  std::string name;  // "est": lower-case letters, digits, '-' and '_', at most 40 characters
  SearchKind kind = SearchKind::Tree;
  // In OMPL benchmark logs (and so in Planner Arena): "control_EST", "marionette_RestPosePRM".
  // Empty when registering: "control_" + the name.
  std::string log_name;
  std::string source;  // the algorithm, with its paper
  // Tree planners: a control is held for 2..max_control_steps integration steps by default,
  // and the projection's cell along a goal point is point_cell_m (see PlannerOptions).
  int max_control_steps = 15;
  double point_cell_m = 0.05;
  // The fraction of expansions that head for the goal (OMPL's goal_bias), as in the EST of
  // Johnson & Murphey, ICRA 2007: the built-in planners' factories set it; a registered
  // planner's factory may use it.
  double goal_bias = 0.1;
  // Point goals: how many rest states meeting the goal the search finds and offers as goal
  // samples before the planner is made (TreeSearchSpace::offerGoalStates), for a planner that
  // needs them (Syclop locates the goal's regions from goal samples).  The built-in planners take
  // none: their searches do not sample point goals.
  int goal_states = 0;
  bool built_in = true;  // false for a registered planner
};

// Makes the planner on `space` (its SpaceInformation, goal and projection as every planner gets
// them).  Called with OMPL's process-wide seed set from the request's seed, under the lock that
// keeps other searches from drawing from it: a planner that seeds its own generators from OMPL
// (as OMPL's planners do) is then a function of the request's seed.  It may throw (the search
// fails with the message).
using TreePlannerFactory = std::function<std::shared_ptr<ompl::base::Planner>(
    const TreeSearchSpace& space, const PlannerInfo& info)>;

// Adds a tree planner (info.kind must be Tree).  Throws FieldError("planner.name") for a name
// that is empty, not of the allowed characters or already registered, FieldError("planner.kind")
// for a roadmap, FieldError("planner.factory") for an empty factory.  Thread-safe; a planner
// cannot be removed.
void registerPlanner(PlannerInfo info, TreePlannerFactory make);

std::vector<PlannerInfo> plannerTable();                      // built-in first, then registered
std::optional<PlannerInfo> findPlanner(const std::string& name);  // nullopt if unknown
std::vector<std::string> plannerNames();                       // in table order
// The factory of a tree planner; FieldError("options.planner") for an unknown name or the roadmap.
TreePlannerFactory treePlannerFactory(const std::string& name);

// OMPL's parameter names of a tree planner and their defaults as set here (goal_bias 0.1);
// empty for the roadmap.  FieldError("options.planner", ...) for an unknown name.
std::map<std::string, std::string> plannerParameters(const std::string& planner);
// FieldError("options.parameters[\"NAME\"]") for a parameter the planner does not have or a value it
// refuses (tried on a throwaway planner), FieldError("options.parameters...") for any parameter of
// the roadmap, FieldError("options.planner") for an unknown planner.
void checkPlannerParameters(const std::string& planner,
                            const std::map<std::string, std::string>& params);

}  // namespace marionette

#pragma GCC visibility pop
