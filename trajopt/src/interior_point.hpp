// SPDX-License-Identifier: BSD-3-Clause
// A primal-dual interior-point method for the transcription's nonlinear programs (sparse_nlp.hpp):
// the filter line-search algorithm of Wachter & Biegler, "On the implementation of an
// interior-point filter line-search algorithm for large-scale nonlinear programming", Math. Prog.
// 2006 (Ipopt's): barrier subproblems, Newton steps with inertia correction, the fraction to the
// boundary, a filter of (constraint violation, barrier objective) with second-order corrections;
// the barrier parameter chosen each iteration by Mehrotra's probing rule while the iterates make
// progress and decreased monotonically otherwise (Nocedal, Wachter & Waltz, "Adaptive barrier
// update strategies for nonlinear interior methods", SIAM J. Optim. 2009).
//
// Its linear algebra is the KKT matrix's structure by stages (kkt_system.hpp): on a transcription
// a factorization costs O(N n^3) for N knots of n, and the solver holds no state outside its call:
// solves run in parallel (docs/decisions/0018 says why it is written here and not Ipopt's).
//
// Budgets are counted in iterations; `keep_going`, asked once per iteration with the iterate's
// figures, may stop it earlier (converged for the caller's purposes, or a caller's deadline).
#pragma once

#include <Eigen/Core>
#include <string>

#include "sparse_nlp.hpp"

namespace marionette::detail {

struct InteriorPointOptions {
  int max_iterations = 100;
  double tolerance = 1e-8;            // the scaled optimality error (Ipopt's tol)
  double constraint_tolerance = 1e-9;  // the rows' violation in their units (constr_viol_tol)
  double complementarity_tolerance = 1e-9;  // unscaled (compl_inf_tol)
  double dual_tolerance = 1.0;              // unscaled (dual_inf_tol)
  bool adaptive_barrier = true;             // false: monotone from the start
};

enum class InteriorPointStatus {
  kConverged,
  kIterationLimit,
  kStopped,            // keep_going said so
  kLineSearchFailed,   // no acceptable step (the restoration phase's case)
  kEvaluationFailed,   // the start could not be evaluated
  kNumericalTrouble,   // no factorization with the right inertia
};
std::string describe(InteriorPointStatus status);

struct InteriorPointResult {
  InteriorPointStatus status = InteriorPointStatus::kNumericalTrouble;
  Eigen::VectorXd z;       // the last iterate (the solution when converged)
  Eigen::VectorXd lambda;  // its rows' multipliers (the Lagrangian f + lambda^T g)
  double objective = 0.0;
  double primal_infeasibility = 0.0;  // unscaled
  int iterations = 0;
  int factorizations = 0;  // with those a solve redid with pivoting (kkt_system.hpp)
  int evaluations = 0;  // of the problem (each with or without derivatives)
  int solves = 0;       // with a factorization (each refined)
  // Where its time went (wall clock, s): for the benchmark only; nothing is decided by it.
  double factorization_s = 0.0, solve_s = 0.0, evaluation_s = 0.0;
};

InteriorPointResult solveInteriorPoint(SparseNlp& nlp, const Eigen::VectorXd& start,
                                       const InteriorPointOptions& options,
                                       const KeepGoing& keep_going = {});

}  // namespace marionette::detail
