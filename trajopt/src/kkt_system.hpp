// SPDX-License-Identifier: BSD-3-Clause
// The interior point's Newton system in the form its factorization takes (interior_point.hpp):
//     [ W + Sigma + delta_w I + J_d^T D J_d    J_c^T      ] [dx]   [r_x]
//     [ J_c                                    -delta_c I ] [dy] = [r_c]
// W the Lagrangian's Hessian, Sigma the bounds' barrier curvature, J_c the equality rows'
// Jacobian, and the inequality rows condensed into the Hessian block with their weights D (their
// slacks' and multipliers' elimination: Wright, "Primal-Dual Interior-Point Methods", SIAM 1997,
// ch. 11).  Ordered stage by stage -- each variable in its stage, each equality row in the stage
// between its variables' -- the matrix is block tridiagonal and factored as such
// (block_tridiagonal_ldlt.hpp).  Where a row or a coupling spans more than neighbouring stages,
// consecutive stages are merged until none does (a problem without stages is one dense block).
//
// The structure is fixed at construction; each factorize() scatters the current values through
// precomputed addresses, no search and no allocation.
#pragma once

#include <Eigen/Core>
#include <vector>

#include "block_tridiagonal_ldlt.hpp"

namespace marionette::detail {

class KktSystem {
 public:
  // An entry of the Jacobian (row: an equality's or inequality's index among its kind) or of the
  // Hessian's lower triangle (row, col: variables), and where its value is in the problem's array.
  struct Entry {
    int row, col, source;
  };
  KktSystem(const std::vector<int>& variable_stage, int equalities, int inequalities,
            const std::vector<Entry>& equality_jacobian,
            const std::vector<Entry>& inequality_jacobian, const std::vector<Entry>& hessian);

  int variables() const { return n_; }
  int equalities() const { return m_; }
  int stages() const { return ldlt_.stages(); }
  int largestStage() const;

  // Factorizes at these values (arrays indexed by the entries' sources; sigma: n, weight: one
  // per inequality row).  Returns the inertia; the step needs n positive and m negative.
  const Inertia& factorize(const double* hessian, const double* jacobian,
                           const Eigen::VectorXd& sigma, const Eigen::VectorXd& inequality_weight,
                           double delta_w, double delta_c);
  bool inertiaIsCorrect() const {
    const Inertia& i = ldlt_.inertia();
    return i.zero == 0 && i.positive == n_ && i.negative == m_;
  }
  bool singular() const { return ldlt_.singular(); }
  const Inertia& inertia() const { return ldlt_.inertia(); }

  // (dx, dy) for the right-hand side (r_x, r_c), in place, refined until the residual is below
  // 1e-10 of the right-hand side (at most 2 refinements).  Stages factored without pivoting
  // (block_tridiagonal_ldlt.hpp) whose refined residual stays above 1e-8 are factored again
  // with pivoting, for this solve and the next ones.
  void solve(Eigen::VectorXd& x, Eigen::VectorXd& c) const;
  // How many factorizations solve() has redone (with pivoting, and back where that failed).
  int pivotedRefactorizations() const { return pivoted_refactorizations_; }

 private:
  struct Pair {  // an inequality row's entries a <= b: weight J_a J_b (times 2 on one variable)
    double* target;
    int row, source_a, source_b;
    double multiplicity;
  };
  struct Scatter {
    double* target;
    int source;
  };
  // ordered_ <- K^-1 rhs (in the factorization's order), refined; false if its residual stays
  // above the accepted one.
  bool refine(const Eigen::VectorXd& rhs) const;
  // Where (a, b) of the symmetric matrix lands (positions: variables 0..n-1, rows n..n+m-1).
  double* address(int a, int b);

  int n_, m_;
  std::vector<int> stage_of_, local_of_;  // per position
  // Per stage k, a local index's place among C_k's coupled rows, and a stage k-1 index's among
  // its coupled columns (-1: none).
  std::vector<std::vector<int>> coupled_row_index_, coupled_column_index_;
  mutable BlockTridiagonalLdlt ldlt_;  // (a solve may factor it again with pivoting)
  mutable int pivoted_refactorizations_ = 0;
  std::vector<Scatter> hessian_, jacobian_;
  std::vector<Pair> pairs_;
  std::vector<double*> variable_diagonal_, row_diagonal_;
  mutable Eigen::VectorXd rhs_, ordered_, residual_, correction_;
};

}  // namespace marionette::detail
