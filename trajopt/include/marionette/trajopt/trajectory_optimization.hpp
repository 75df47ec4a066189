// SPDX-License-Identifier: BSD-3-Clause
// Trajectory optimization: a plan's rig motion re-shaped on the exact dynamics so that the
// puppet does what was meant and then hangs still (docs/design.md, trajectory optimization).
// One engine: the contact-implicit transcription of the variational integrator (configurations,
// inputs and the strings' and stops' multipliers as variables, the discrete Euler-Lagrange
// equations as constraints, complementarity as an exact penalty, the puppet at rest at the end;
// transcription_optimization.hpp in src/), solved by the interior point written for its
// structure or by Ipopt.  It starts from the best of several smooth motions near the plan, ranked
// by a rollout of the integrator (warm_starts.hpp in src/).
//
// Contents
//   OptimizationWeights   the objective's terms and their weights (each term is normalized:
//                         a weight of 1 makes a typical bad plan's term of order 1 to 100).
//   OptimizationSolver    the transcription's solver: the interior point or Ipopt.
//   OptimizationOptions   solver, weights, margin, settle hold, iteration budget, deadline.
//   OptimizationLimits    the largest motion optimized.
//   OptimizationReport    what the optimization did: method, iterations, time, message.
//   optimizePlan          a better verified plan for the same request, or the plan unchanged.
#pragma once

#include <string>
#include <vector>

#include "marionette/plan/plan.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/problem/motion_problem.hpp"
#include "marionette/problem/progress.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// The transcription's objective (docs/design.md, trajectory optimization): each term a sum over
// the knots, as the engine weighs a plan's and a window's motion.
struct OptimizationWeights {
  double effort = 1e-2;       // integral of sum_j (u_j' / max_speed_j)^2 dt (s)
  double jerk = 1e-3;         // integral of sum_j (u_j''' / (max_accel_j / 0.1 s))^2 dt (s)
  double swing = 1.0;         // integral of the puppet's kinetic energy / E_ref over the motion
  double settle = 10.0;       // the same while the rig holds still after the motion (a
                              // performance's end; a plan's settle hold in its warm starts' score)
  double tension_rate = 1.0;  // integral of sum_j (0.1 s * lambda_j' / lambda_ref_j)^2 dt: a
                              // catch is a spike of the string's multiplier lambda_j
  double complementarity = 1.0;  // sum_j lambda_j / lambda_ref_j * gap_j / 1 mm: a string that
                                 // pulls while slack, a stop that pushes while apart
  double tracking = 1.0;      // performances: integral of sum_i (|p_i - target_i| / 1 cm)^2 dt
                              // over the named points that have targets (plans have none)

  // Names as `--weight NAME=V` and the proto give them.
  static const std::vector<std::string>& names();
  double* byName(const std::string& name);  // nullptr for an unknown name
};

// The transcription's solver: the interior point written for its structure (thread-safe, solves
// in parallel), or Ipopt with MUMPS (one solve at a time in a process; its cross-check).
enum class OptimizationSolver { InteriorPoint, Ipopt };

// The optimizer's name as --optimizer and the proto's method give it: "interior-point" or
// "ipopt" ("transcription", or "", is the default solver's).
std::string optimizerName(const struct OptimizationOptions& o);
// From those names; false for any other.
bool parseOptimizer(const std::string& name, struct OptimizationOptions& out);

struct OptimizationOptions {
  OptimizationSolver solver = OptimizationSolver::InteriorPoint;
  OptimizationWeights weights;
  double margin_m = 0.02;     // every sample's clearance to the stage at least this (m)
  double settle_s = 1.0;      // the hold after the motion whose swing the warm starts' score weighs
  // A deadline the caller sets on the optimization's wall clock (s, from its start; 0: none).
  // The result is decided by work alone (max_iterations, the warm starts' counted searches): the
  // same request gives the same plan on any machine, however loaded.  A deadline only stops it,
  // the report saying so, and the answer is then what the solver had.
  double time_limit_s = 0.0;
  // The solver's budget per solve, in [1, 10000].  PuppetCopter's stage-worthy plans take 10 to
  // 50 iterations; those 100 do not settle take ~10 s.
  int max_iterations = 100;
  double knots_per_s = 4.0;   // the warm starts' B-spline segments a second (at least 3 in all)
  // The rig's inputs before the plan's first sample, at the plan's rate, the latest first (rows
  // of n_k): its speed and acceleration going in, which the motion's rows continue (a
  // performance's end settled from where its rig is moving).  Empty: at rest at the start's.
  Eigen::MatrixXd rig_history;
};

// The largest motion optimized (docs/service.md, limits): a longer plan comes back unchanged,
// its report saying why, and longer candidate durations are not tried.  The warm starts' spline
// basis is dense in samples x control points (80 MB at the bound).
struct OptimizationLimits {
  static constexpr double kSamples = 60000;        // a 600 s performance at 100 Hz
  static constexpr double kBasisEntries = 1e7;     // samples x control points
};
// Empty when a motion of duration_s at rate_hz with knots_per_s spline segments a second fits
// the limits; otherwise what exceeds them.
std::string optimizationTooLarge(double duration_s, double rate_hz, double knots_per_s);

struct OptimizationReport {
  bool improved = false;  // false: the plan came back unchanged (`message` says why)
  std::string method;     // the solver, the knots, the warm start and the modes it solved at
  int iterations = 0;
  double time_s = 0.0;
  std::string message;
};

struct OptimizedPlan {
  Plan plan;
  OptimizationReport report;
};

// `plan` answers `problem` (the same model, scene, start and goal; its inputs at
// plan.rate_hz; plan.seed, or 1, seeds the search for a rest pose at the goal).  Returns a
// verified plan (planMotion's verification) that ranks no lower than `plan` (exact and keeping
// the margin, above exact short of it, above anything else) and is stage-worthy wherever `plan`
// is; else `plan` unchanged with report.message saying why.  Progress events have phase
// "optimize".  Throws FieldError for bad options ("optimization.settle_s", ...), PlanCancelled
// when `cancelled` (or the thread's CancelScope) says stop.
OptimizedPlan optimizePlan(const MotionProblem& problem, const Plan& plan,
                           const OptimizationOptions& options, const ProgressFn& progress = {},
                           const CancelFn& cancelled = {});
void checkOptimizationOptions(const OptimizationOptions& options);

}  // namespace marionette

#pragma GCC visibility pop
