// SPDX-License-Identifier: BSD-3-Clause
// A motion search with one of the registered tree planners over a TreeSearchSpace.
//
// Contents
//   TreeSearchOptions  the planner and its OMPL parameters, the budgets, progress.
//   SearchResult       the rig's motion found (braked and held), and the search's statistics.
//   searchTree()       sets the planner up on the space, solves until the first state that meets
//                      the goal, its propagation budget, the caller's deadline, or the thread's
//                      CancelScope says stop.  A search that ends at the first two is a function
//                      of (problem, planner, seed) alone; one that a deadline ends is not.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "marionette/models/rig_trajectory.hpp"
#include "marionette/plan/plan.hpp"
#include "marionette/search/search_problem.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct TreeSearchOptions {
  std::string planner = "est";  // a tree planner of the registry
  std::map<std::string, std::string> parameters;  // OMPL parameters by their ParamSet names
  // The caller's deadline (s of wall clock, 0: none): it stops the search, and the result says
  // so ("deadline").
  double time_limit_s = 0.0;
  // Integrator steps the search may take (0: no budget); the budget that keeps a search that
  // fails a function of its seed.  It is checked between expansions, so a search stops within
  // one expansion's propagations (at most max_control_steps) of it.
  long max_propagations = 0;
  // Called about once a second from the searching thread: the counters so far and the seconds
  // since the search began.
  std::function<void(const SearchCounters&, double elapsed_s)> progress;
};

struct SearchResult {
  bool found = false;    // some path (exact or approximate)
  // What ended the search: "goal", "propagations", "deadline", "planner" (it ended on its
  // own), or "" for the roadmap.
  std::string stopped_by;
  RigTrajectory inputs;  // the rig's motion at the planning step, ending stopped
  std::string message;   // why not exact, when it is not
  PlanStatistics stats;  // the search's part: planning time, counts, best goal distance
};

// Throws FieldError for an unknown planner or parameter (naming options.planner or
// options.parameters["NAME"]), for a goal the model cannot have, or a start in collision;
// PlanCancelled when the thread's CancelScope said stop.
SearchResult searchTree(const TreeSearchProblem& problem, const TreeSearchOptions& options);

}  // namespace marionette

#pragma GCC visibility pop
