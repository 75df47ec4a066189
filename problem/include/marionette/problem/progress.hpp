// SPDX-License-Identifier: BSD-3-Clause
// What long calls (plans, optimizations, performances) report while they run, about once a
// second, from the thread that runs them.
#pragma once

#include <functional>
#include <string>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct PlanProgress {
  std::string phase;  // "roadmap", "search", "verify", "optimize"
  double elapsed_s = 0.0;
  long propagations = 0;
  long states = 0;  // tree planners: motions added so far; prm: roadmap vertices
  double best_goal_distance = 0.0;
  // "optimize": the solver's iteration, its objective and its largest constraint violation.
  int iteration = 0;
  double cost = 0.0;
  double constraint_violation = 0.0;
};
using ProgressFn = std::function<void(const PlanProgress&)>;

}  // namespace marionette

#pragma GCC visibility pop
