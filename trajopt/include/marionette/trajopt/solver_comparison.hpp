// SPDX-License-Identifier: BSD-3-Clause
// The transcription's two solvers on the same problem, for benchmarks/bench_solver: the first
// solve optimizePlan makes of a plan (its warm start, knots and modes), run by the interior point
// written for the transcription and by Ipopt with MUMPS, each from the same start to convergence
// or max_iterations, timed (docs/benchmarks.md, the solver).
#pragma once

#include <string>
#include <vector>

#include "marionette/trajopt/trajectory_optimization.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct SolverRun {
  std::string solver;   // "interior-point" or "ipopt"
  std::string status;   // "converged", "out of iterations", ...
  int iterations = 0;
  double time_s = 0.0;  // the solve's wall-clock time
  double objective = 0.0;
  double violation = 0.0;  // the rows' largest violation, in their units
  // The interior point's only: its factorizations and solves, and the time (s) in them and in
  // evaluating the problem.
  int factorizations = 0, solves = 0;
  double factorization_s = 0.0, solve_s = 0.0, evaluation_s = 0.0;
};

struct SolverComparison {
  int variables = 0, constraints = 0, knots = 0;
  std::string method;          // the transcription, as the report says it
  std::vector<SolverRun> runs;  // in the order run
};

// `ipopt_first`: which solver runs first (a benchmark alternates them).  Throws what
// optimizePlan throws.
SolverComparison compareSolvers(const MotionProblem& request, const Plan& plan,
                                const OptimizationOptions& options, bool ipopt_first);

}  // namespace marionette

#pragma GCC visibility pop
