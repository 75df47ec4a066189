// SPDX-License-Identifier: BSD-3-Clause
// A SparseNlp as the interior point (interior_point.hpp) works on it, in Ipopt's form (Wachter &
// Biegler, Math. Prog. 2006, section 3):
//     min f(x)   s.t.   c(x) = 0,   d(x) - s = 0,   d_L <= s <= d_U,   x_L <= x <= x_U,
// with fixed variables taken out (held at their value), rows with equal bounds as equalities c,
// rows with no bound dropped, the rest as inequalities d with slacks s, and everything scaled by the
// problem's own scales (x~ = D_z x, c~ = D_g c, f~ = s_f f).  The bounds are relaxed by
// kBoundRelax of their size, as Ipopt's bound_relax_factor does, so that a solution on a bound is
// an interior point's limit.
#pragma once

#include <Eigen/Core>
#include <vector>

#include "kkt_system.hpp"
#include "sparse_nlp.hpp"

namespace marionette::detail {

// An optional lower and upper bound per entry of a vector.
struct Bounds {
  Eigen::VectorXd lower, upper;
  std::vector<char> has_lower, has_upper;
  int size() const { return static_cast<int>(lower.size()); }
  int count() const;  // how many bounds in all
};

class ScaledProblem {
 public:
  static constexpr double kBoundRelax = 1e-8;
  explicit ScaledProblem(SparseNlp& nlp);

  int variables() const { return n_; }         // free ones
  int equalities() const { return m_e_; }
  int inequalities() const { return m_i_; }
  const Bounds& variableBounds() const { return x_bounds_; }
  const Bounds& slackBounds() const { return s_bounds_; }
  const std::vector<int>& stages() const { return stages_; }
  const std::vector<KktSystem::Entry>& equalityJacobian() const { return eq_entries_; }
  const std::vector<KktSystem::Entry>& inequalityJacobian() const { return ineq_entries_; }
  const std::vector<KktSystem::Entry>& hessianEntries() const { return hess_entries_; }

  // The scaled free variables of a full point, and back.
  Eigen::VectorXd scaledFrom(const Eigen::VectorXd& z) const;
  Eigen::VectorXd pointOf(const Eigen::VectorXd& x) const;

  // Evaluates at x (scaled free variables): f, c, d and, with derivatives, the gradient and the
  // Jacobian's values (jacobian(): scaled, by entry source).  False if not finite.
  bool evaluate(const Eigen::VectorXd& x, bool derivatives);
  double f() const { return f_; }
  const Eigen::VectorXd& c() const { return c_; }
  const Eigen::VectorXd& d() const { return d_; }
  const Eigen::VectorXd& gradient() const { return grad_; }
  const double* jacobian() const { return jac_.data(); }
  // The scaled Lagrangian's Hessian sigma f~ + y_c^T c~ + y_d^T d~ at the last point evaluated
  // with derivatives (by entry source).
  const double* hessian(double sigma, const Eigen::VectorXd& y_c, const Eigen::VectorXd& y_d);
  // A Hessian of zeros (by entry source).
  const double* zeroHessian() const { return zero_hess_.data(); }
  // J_c^T y_c + J_d^T y_d, and J_c v, J_d v.
  Eigen::VectorXd transposedProduct(const Eigen::VectorXd& y_c, const Eigen::VectorXd& y_d) const;
  Eigen::VectorXd equalityProduct(const Eigen::VectorXd& v) const;
  Eigen::VectorXd inequalityProduct(const Eigen::VectorXd& v) const;

  // In the problem's own units: the rows' largest violation of their (relaxed) bounds.
  double unscaledViolation() const;
  double objectiveScale() const { return objective_scale_; }
  // Full-length multipliers of the problem's rows (Ipopt's lambda) from the scaled ones.
  Eigen::VectorXd rowMultipliers(const Eigen::VectorXd& y_c, const Eigen::VectorXd& y_d) const;

 private:
  SparseNlp& nlp_;
  int n_all_, m_all_, n_ = 0, m_e_ = 0, m_i_ = 0;
  std::vector<int> free_;       // free variable -> its index in z
  Eigen::VectorXd fixed_point_; // z with the fixed variables at their value
  Eigen::VectorXd z_scale_, g_scale_, g_lower_, g_upper_;
  double objective_scale_ = 1.0;
  std::vector<int> equality_rows_, inequality_rows_;  // -> row of g
  Bounds x_bounds_, s_bounds_;
  std::vector<int> stages_;
  std::vector<KktSystem::Entry> eq_entries_, ineq_entries_, hess_entries_;
  std::vector<int> hess_rows_, hess_cols_;  // per Hessian entry, its z indices
  std::vector<double> raw_jac_, jac_, raw_hess_, hess_, zero_hess_;
  std::vector<double> jac_entry_scale_, hess_entry_scale_;  // per entry: g_r / z_j, 1 / (z_a z_b)
  double f_ = 0.0;
  Eigen::VectorXd c_, d_, grad_, z_, y_full_;
};

}  // namespace marionette::detail
