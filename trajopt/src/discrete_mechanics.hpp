// SPDX-License-Identifier: BSD-3-Clause
// The variational integrator's equations written as constraints between neighbouring knots, for
// a transcription that makes the configurations and the constraint forces variables (discrete
// mechanics and optimal control: Ober-Blöbaum, Junge & Marsden, "Discrete mechanics and optimal
// control: an analysis", ESAIM COCV 2011; with unilateral constraints as complementarity:
// Manchester & Kuindersma, "Variational Contact-Implicit Trajectory Optimization", ISRR 2017).
//
// With L_d(q_a, q_b) = dt L((q_a + q_b)/2, (q_b - q_a)/dt) and the damping's discrete force
// f-(q_a, q_b) = -c(q_m) (q_b - q_a), the discrete Euler-Lagrange equations at knot k are
//     D2L_d(q_{k-1}, q_k) + D1L_d(q_k, q_{k+1}) + f-(q_k, q_{k+1}) - G(q_k)^T lambda_k = 0
// (D2L_d(q_{-1}, q_0) is the start's momentum p_0), and the unilateral rows g(q_{k+1}) <= 0
// are complementary to lambda_k >= 0: exactly what VariationalIntegrator::step solves for
// q_{k+1} and the taut set (models/include/marionette/models/integrator.hpp).  Rows c < n_s are
// the strings, g = 1/2 (|a - e|^2 - l^2) (m^2); the others the joint stops, g = sign (q - bound).
//
// Every derivative is exact, from the dynamics' recursions (dynamics.hpp): the Lagrangian's
// second derivatives at the midpoint and the strings' second derivatives at the knot.
//
// Contents
//   IntervalTerms       D1L_d + f- and D2L_d of one interval with their Jacobians in q_a, q_b
//                       and in dt.
//   KnotConstraints     the unilateral rows at a knot, their gradient, and the Jacobian of the
//                       constraint force G^T lambda.
//   DiscreteMechanics   computes both; one per thread (it holds the dynamics' scratch).
#pragma once

#include <Eigen/Core>
#include <vector>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"

namespace marionette::detail {

struct IntervalTerms {
  Eigen::VectorXd D1, D2;                  // n_d: D1L_d + f-, and D2L_d (N s or N m s)
  Eigen::MatrixXd D1_a, D1_b, D2_a, D2_b;  // n_d x n_d: their Jacobians in q_{d,a}, q_{d,b}
  Eigen::VectorXd D1_dt, D2_dt;            // n_d: their derivatives in dt (q_a, q_b fixed)
};

struct KnotConstraints {
  Eigen::VectorXd g;        // n_c: the unilateral rows (<= 0 is feasible)
  Eigen::VectorXd span_m;   // n_s: the strings' spans |a - e|
  Eigen::MatrixXd G;        // n_c x n_q: dg/dq
  Eigen::MatrixXd force_q;  // n_d x n_q: d/dq of the dynamic rows of G^T lambda (with lambda)
};

class DiscreteMechanics {
 public:
  // The damping as the integrator with these options applies it (scale, override).
  DiscreteMechanics(ModelPtr model, const IntegratorOptions& options);

  const Model& model() const { return *model_; }
  int nd() const { return nd_; }
  int nq() const { return nq_; }
  int constraintRows() const { return nc_; }  // n_c = strings + joint stops

  // The interval (q_a, q_b) (n_q each; the Lagrangian reads their dynamic parts) of duration
  // dt_s.  With derivatives false, only D1 and D2.
  void interval(const Eigen::VectorXd& q_a, const Eigen::VectorXd& q_b, double dt_s,
                IntervalTerms& out, bool derivatives = true);
  // The unilateral rows at q (n_q) and their gradient; with lambda (n_c), also force_q.
  void knot(const Eigen::VectorXd& q, const Eigen::VectorXd* lambda, KnotConstraints& out);

  // Second derivatives for a Lagrangian Hessian: sum_j w_j D2h_j at q (n_q x n_q, the strings'
  // rows' curvature; w: n_s), and the constraint force's coupling of multipliers and
  // configuration, d2(y^T G_d(q)^T lambda)/d lambda dq (n_c x n_q; y: n_d; stops' rows zero).
  void stringCurvature(const Eigen::VectorXd& q, const Eigen::VectorXd& w, Eigen::MatrixXd& H);
  void forceCoupling(const Eigen::VectorXd& q, const Eigen::VectorXd& y, Eigen::MatrixXd& C);

  // A string's multiplier over a step of dt_s from its tension (N) at q's span |a - e|: the
  // integrator's T = lambda |a - e| / dt inverted.
  static double multiplier(double tension_N, double span_m, double dt_s) {
    return tension_N * dt_s / span_m;
  }

 private:
  ModelPtr model_;
  int nd_, nk_, nq_, ns_, nc_;
  Eigen::VectorXd damping_;  // n_d
  DynamicsData data_;
  Eigen::VectorXd qm_, v_, delta_, c_, dc_;
  Eigen::MatrixXd hessian_;  // n_q x n_q: sum_j lambda_j D2h_j
};

}  // namespace marionette::detail
