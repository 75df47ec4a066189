// SPDX-License-Identifier: BSD-3-Clause
// Trajectory optimization: a plan's rig motion re-shaped on the exact dynamics so that the
// puppet does what was meant and then hangs still (docs/design.md, trajectory optimization).
// Two methods: the contact-implicit transcription (the default; transcription_optimization.hpp
// in src/), and single shooting in the manner of Zimmermann, Poranne, Bern and Coros,
// "PuppetMaster: Robotic Animation of Marionettes", ACM TOG 38(4), 2019: the inputs are a cubic
// B-spline per rig input, every evaluation rolls the variational integrator out over the motion
// and a settle hold, and derivatives come from its exact linearization (forward sensitivities),
// never from finite differences; Ipopt takes the nonlinear program (limits as linear constraints
// on the control points, the goal as constraints at the motion's end).  The duration is searched
// outside the NLP: starts are rolled out at several durations, and the inputs are optimized at
// the best's.
//
// Contents
//   OptimizationWeights   the objective's terms and their weights (each term is normalized:
//                         a weight of 1 makes a typical bad plan's term of order 1 to 100).
//   OptimizationMethod    single shooting or contact-implicit transcription.
//   OptimizationOptions   method, weights, settle hold, time budget, knots.
//   OptimizationCost      the objective's terms for one motion.
//   OptimizationReport    what the optimization did: method, iterations, time, cost before/after.
//   optimizePlan          a better verified plan for the same request, or the plan unchanged.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "marionette/plan/plan.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/problem/motion_problem.hpp"
#include "marionette/problem/progress.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct OptimizationWeights {
  double effort = 1e-2;       // integral of sum_j (u_j' / max_speed_j)^2 dt (s)
  double jerk = 1e-3;         // integral of sum_j (u_j''' / (max_accel_j / 0.1 s))^2 dt (s)
  double swing = 1.0;         // integral of the puppet's kinetic energy / E_ref over the motion
  double settle = 10.0;       // the same over the settle hold after it
  double tension_rate = 1.0;  // integral of sum_j (0.1 s * T_j' / T_ref_j)^2 dt (s)
  double slack = 10.0;        // integral of sum_j (max(0, T_floor_j - tau_j) / T_ref_j)^2 dt
  double duration = 1.0;      // the motion's duration (s): 0 lets it take as long as it likes
  double clearance = 100.0;   // integral of (max(0, margin - d) / margin)^2 dt, d the clearance
                              // to the stage (and to anything, with a 1 mm margin)
  double tracking = 1.0;      // performances: integral of sum_i (|p_i - target_i| / 1 cm)^2 dt
                              // over the named points that have targets (plans have none)

  // Names as `--weight NAME=V` and the proto give them.
  static const std::vector<std::string>& names();
  double* byName(const std::string& name);  // nullptr for an unknown name
};

struct OptimizationCost {
  double effort = 0, jerk = 0, swing = 0, settle = 0, tension_rate = 0, slack = 0, duration = 0,
         clearance = 0, tracking = 0;
  double total() const {
    return effort + jerk + swing + settle + tension_rate + slack + duration + clearance + tracking;
  }
  // (weight name, its term), in OptimizationWeights::names() order.
  std::vector<std::pair<std::string, double>> terms() const;
  double* byName(const std::string& name);  // the term of that weight; nullptr if unknown
};

// The contact-implicit transcription of the variational integrator (the default):
// configurations, inputs and the strings' and stops' multipliers as variables, the discrete
// Euler-Lagrange equations as constraints, complementarity as an exact penalty, the puppet at rest
// at the end (docs/design.md, trajectory optimization); or single shooting over B-spline inputs.
enum class OptimizationMethod { Shooting, Transcription };
// The transcription's solver: the interior point written for its structure (thread-safe, solves
// in parallel), or Ipopt with MUMPS (one solve at a time in a process; its cross-check).
enum class OptimizationSolver { InteriorPoint, Ipopt };

// The optimizer's name as --optimizer and the proto's method give it: "shooting", "transcription"
// (with the default solver), "interior-point" or "ipopt" (the transcription with that solver).
std::string optimizerName(const struct OptimizationOptions& o);
// From those names ("" is the default); false for any other.
bool parseOptimizer(const std::string& name, struct OptimizationOptions& out);

struct OptimizationOptions {
  OptimizationMethod method = OptimizationMethod::Transcription;
  OptimizationSolver solver = OptimizationSolver::Ipopt;
  OptimizationWeights weights;
  double margin_m = 0.02;     // every sample's clearance to the stage at least this (m)
  double settle_s = 1.0;      // the hold after the motion whose swing is penalized (s)
  // A deadline the caller sets on the optimization's wall clock (s, from its start; 0: none).
  // The transcription's result is decided by work alone (max_iterations, the warm starts'
  // counted searches): the same request gives the same plan on any machine, however loaded.  A
  // deadline only stops it, the report saying so, and the answer is then what the solver had.
  // Single shooting is paced by the clock (20 s when none is set).
  double time_limit_s = 0.0;
  // The solver's budget per solve, in [1, 10000]: the transcription's budget.  PuppetCopter's
  // stage-worthy plans take 10 to 50 iterations; those 100 do not settle take ~10 s.
  int max_iterations = 100;
  double knots_per_s = 4.0;   // B-spline segments per second of motion (at least 3 in all)
};

// The largest motion optimized (docs/service.md, limits): a longer plan comes back unchanged,
// its report saying why, and longer candidate durations are not tried.  The spline's input
// Hessian is dense in its variables (8 n^2 bytes, 32 MB at the bound), its basis dense in samples x
// control points (80 MB at the bound).
struct OptimizationLimits {
  static constexpr int kVariables = 2048;          // inputs x free control points
  static constexpr double kSamples = 60000;        // a 600 s performance at 100 Hz
  static constexpr double kBasisEntries = 1e7;     // samples x control points
};
// Empty when a motion of duration_s at rate_hz with knots_per_s spline segments a second fits
// the limits; otherwise what exceeds them.
std::string optimizationTooLarge(int inputs, double duration_s, double rate_hz,
                                 double knots_per_s);

struct OptimizationReport {
  bool improved = false;  // false: the plan came back unchanged (`message` says why)
  std::string method;     // e.g. "ipopt single shooting, cubic B-spline inputs, 14 segments"
  int iterations = 0;
  int evaluations = 0;    // rollouts
  double time_s = 0.0;
  OptimizationCost before;  // the plan's own motion (its spline fit if it cannot be rolled out)
  OptimizationCost after;
  std::string message;
};

struct OptimizedPlan {
  Plan plan;
  OptimizationReport report;
};

// `plan` answers `problem` (the same model, scene, start and goal; its inputs at
// plan.rate_hz; plan.seed, or 1, seeds the search for a rest pose at the goal).  Returns a verified plan (planMotion's verification) that is exact and costs
// less, or `plan` unchanged with report.message saying why.  Progress events have phase
// "optimize".  Throws FieldError for bad options ("optimization.settle_s", ...), PlanCancelled
// when `cancelled` (or the thread's CancelScope) says stop.
OptimizedPlan optimizePlan(const MotionProblem& problem, const Plan& plan,
                           const OptimizationOptions& options, const ProgressFn& progress = {},
                           const CancelFn& cancelled = {});
void checkOptimizationOptions(const OptimizationOptions& options);

}  // namespace marionette

#pragma GCC visibility pop
