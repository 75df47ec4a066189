// SPDX-License-Identifier: BSD-3-Clause
// A nonlinear program as both solvers take it (interior_point.hpp, and Ipopt through
// ipopt_nlp.hpp):
//     min f(z)   s.t.   g_lower <= g(z) <= g_upper,   z_lower <= z <= z_upper,
// with a sparse Jacobian and the Lagrangian's Hessian of fixed structure, each variable's and row's
// scale, and each variable's stage: the knot it belongs to, so that the KKT matrix ordered stage by
// stage is block tridiagonal (block_tridiagonal_ldlt.hpp).  A bound of +-kInfinity or beyond is
// none; equal bounds fix a variable (the solvers take it out) or make a row an equality.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <vector>

namespace marionette::detail {

class SparseNlp {
 public:
  static constexpr double kInfinity = 1e19;
  virtual ~SparseNlp() = default;

  virtual int variables() const = 0;
  virtual int constraints() const = 0;
  virtual void bounds(Eigen::VectorXd& z_lower, Eigen::VectorXd& z_upper, Eigen::VectorXd& g_lower,
                      Eigen::VectorXd& g_upper) const = 0;
  // Each variable's and row's scale (multiplies it; 1 by default) and the objective's.
  virtual void scaling(Eigen::VectorXd& z_scale, Eigen::VectorXd& g_scale) const;
  virtual double objectiveScale() const { return 1.0; }
  // Each variable's stage (0, 1, ...; all 0 by default: one dense block).
  virtual void stages(std::vector<int>& stage) const;

  virtual int jacobianNonzeros() const = 0;
  virtual void jacobianStructure(int* rows, int* cols) const = 0;
  // The Hessian's lower triangle (row >= col); repeated entries add.
  virtual int hessianNonzeros() const = 0;
  virtual void hessianStructure(int* rows, int* cols) const = 0;

  // Everything at z (with derivatives: the gradient and the Jacobian's values too).  False when
  // the point cannot be evaluated (a value not finite).
  virtual bool evaluate(const Eigen::VectorXd& z, bool derivatives) = 0;
  virtual double cost() const = 0;
  virtual const Eigen::VectorXd& gradient() const = 0;
  virtual const Eigen::VectorXd& rows() const = 0;
  virtual void jacobianValues(double* values) const = 0;
  // The Lagrangian's Hessian sigma f + y^T g at z, in hessianStructure()'s order; after
  // evaluate(z, true).
  virtual void hessian(const Eigen::VectorXd& z, double sigma, const Eigen::VectorXd& y,
                       double* values) = 0;
};

// What a solver says of each iteration, to a caller that may stop it (converged for the caller's
// purposes, or a caller's deadline): the same from either solver.
struct SolveProgress {
  int iteration = 0;
  double objective = 0.0;             // the problem's f
  double primal_infeasibility = 0.0;  // the rows' largest violation, in their units
  double barrier = 0.0;               // the interior point's barrier parameter mu
  // In the solver's restoration phase (looking for a feasible point; the figures are then the
  // restoration problem's, not this one's).
  bool restoring = false;
  const Eigen::VectorXd* iterate = nullptr;  // the current point (all of the problem's variables)
};
using KeepGoing = std::function<bool(const SolveProgress&)>;

inline void SparseNlp::scaling(Eigen::VectorXd& z_scale, Eigen::VectorXd& g_scale) const {
  z_scale = Eigen::VectorXd::Ones(variables());
  g_scale = Eigen::VectorXd::Ones(constraints());
}

inline void SparseNlp::stages(std::vector<int>& stage) const { stage.assign(variables(), 0); }

}  // namespace marionette::detail
