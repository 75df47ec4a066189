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
// the strings, g = 1/2 (|a - e|^2 - l^2) (m^2); then n_t contact rows (the integrator's contacts,
// those `contact_rows` names: contact_rows.hpp's gap, m); the others the joint stops,
// g = sign (q - bound).  A contact's friction is the impulse beta_k (2 per contact, in its slip
// basis B at q_k) on the rows F = B^T dx/dq at q_k, x the point's centre in its body's core frame:
// the DEL rows gain -F(q_k)^T beta_k, and its slip over the step is B_k^T (x(q_{k+1}) - x(q_k)),
// as the integrator's step writes them (integrator_friction.cpp); a capsule's middle slips by its
// material point's displacement, x_{k+1} - (t_{k+1} - t_k) (b - a)_{k+1} - x_k.
//
// Every derivative is exact, from the dynamics' recursions (dynamics.hpp): the Lagrangian's
// second derivatives at the midpoint and the strings' second derivatives at the knot; the contact
// rows' second derivatives (their gaps', friction rows' and bases') by central differences of
// their exact first derivatives.
//
// Contents
//   IntervalTerms       D1L_d + f- and D2L_d of one interval with their Jacobians in q_a, q_b
//                       and in dt.
//   KnotConstraints     the unilateral rows at a knot, their gradient, and the Jacobian of the
//                       constraint force G^T lambda.
//   DiscreteMechanics   computes both; one per thread (it holds the dynamics' scratch).
#pragma once

#include <Eigen/Core>
#include <memory>
#include <string>
#include <vector>

#include "marionette/models/contact_rows.hpp"
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
  // n_d x n_q: d/dq of the dynamic rows of G^T lambda + F^T beta (with lambda and beta).
  Eigen::MatrixXd force_q;
  // The contacts' friction frames: F = B^T dx/dq (2 n_t x n_q, contact t's rows 2t, 2t + 1), each
  // point's centre in its core frame (3 x n_t) and slip basis there (3 x 2 n_t, contact t's columns
  // 2t, 2t + 1), and its rotation to the world (3 x 3 n_t).
  Eigen::MatrixXd F;
  Eigen::MatrixXd x_q;  // 3 n_t x n_q: dx/dq (contact t's rows 3t..3t+2)
  Eigen::Matrix3Xd x;
  Eigen::Matrix3Xd basis;
  Eigen::Matrix3Xd rotation;
  // A capsule's middle (a segment row) touches at its point x = a + t (b - a) that enters
  // deepest (ContactRows::SlipFrame): x_q is its material point's, and t (n_t), the axis b - a
  // (3 x n_t) and d(b - a)/dq (3 n_t x n_q) say where the material point held at t_k is at knot
  // k + 1 (zero for a point row).  With derivatives, dt/dq (n_t x n_d, central differences: the
  // deepest point moves along the capsule).
  Eigen::VectorXd t;
  Eigen::Matrix3Xd axis;
  Eigen::MatrixXd axis_q;
  Eigen::MatrixXd t_q;
  // With derivatives, per contact t: d2 g_t / dq2 (n_d x n_d), d(F_t row j)/dq (column i: the
  // row's derivative in q_i; 2 of n_d x n_d), and dB_t/dq (6 x n_d, B column-major).
  std::vector<Eigen::MatrixXd> gap_hessian, friction_q, basis_q;
};

class DiscreteMechanics {
 public:
  // The damping as the integrator with these options applies it (scale, override); the rows
  // contact_rows of options.contacts as its contact rows (none without contacts).
  DiscreteMechanics(ModelPtr model, const IntegratorOptions& options,
                    std::vector<int> contact_rows = {});

  const Model& model() const { return *model_; }
  int nd() const { return nd_; }
  int nq() const { return nq_; }
  int constraintRows() const { return nc_; }  // n_c = strings + contacts + joint stops
  int contactRows() const { return nt_; }     // n_t
  int contactRow(int t) const { return contact_rows_[t]; }  // its row in options.contacts
  double friction(int t) const { return rows_ ? rows_->friction(contact_rows_[t]) : 0.0; }
  std::string contactName(int t) const { return rows_->name(contact_rows_[t]); }
  bool segmentContact(int t) const { return contacts_->segmentRow(contact_rows_[t]); }

  // The interval (q_a, q_b) (n_q each; the Lagrangian reads their dynamic parts) of duration
  // dt_s.  With derivatives false, only D1 and D2.
  void interval(const Eigen::VectorXd& q_a, const Eigen::VectorXd& q_b, double dt_s,
                IntervalTerms& out, bool derivatives = true);
  // The unilateral rows at q (n_q), their gradient and the contacts' friction frames; with lambda
  // (n_c) and beta (2 n_t), also force_q and the contacts' second derivatives.
  void knot(const Eigen::VectorXd& q, const Eigen::VectorXd* lambda, KnotConstraints& out,
            const Eigen::VectorXd* beta = nullptr);

  // Second derivatives for a Lagrangian Hessian: sum_j w_j D2h_j at q (n_q x n_q, the strings'
  // rows' curvature; w: n_s), and the constraint force's coupling of multipliers and
  // configuration, d2(y^T G_d(q)^T lambda)/d lambda dq (n_c x n_q; y: n_d; stops' rows zero).
  // The contacts' are the knot's (gap_hessian, friction_q).
  void stringCurvature(const Eigen::VectorXd& q, const Eigen::VectorXd& w, Eigen::MatrixXd& H);
  void forceCoupling(const Eigen::VectorXd& q, const Eigen::VectorXd& y, Eigen::MatrixXd& C);

  // A string's multiplier over a step of dt_s from its tension (N) at q's span |a - e|: the
  // integrator's T = lambda |a - e| / dt inverted.
  static double multiplier(double tension_N, double span_m, double dt_s) {
    return tension_N * dt_s / span_m;
  }

 private:
  // Contact t's friction frame and gap gradient at data_'s kinematics into out's columns.
  void contactFrame(int t, KnotConstraints& out);

  ModelPtr model_;
  std::shared_ptr<const Contacts> contacts_;
  std::vector<int> contact_rows_;
  std::unique_ptr<ContactRows> rows_;
  int nd_, nk_, nq_, ns_, nt_, nc_;
  Eigen::VectorXd damping_;  // n_d
  DynamicsData data_;
  Eigen::VectorXd qm_, v_, delta_, c_, dc_;
  Eigen::MatrixXd hessian_;  // n_q x n_q: sum_j lambda_j D2h_j
  Eigen::MatrixXd x_jacobian_, axis_jacobian_;  // 3 x n_d
  KnotConstraints plus_, minus_;  // the contacts' at q +- a step (central differences)
};

}  // namespace marionette::detail
