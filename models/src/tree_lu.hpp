// SPDX-License-Identifier: BSD-3-Clause
// Factorisation of an n_d x n_d matrix with the sparsity of the puppet's joint tree, without fill
// and without pivoting (private to the models library).
//
// The integrator's matrices -- the mass matrix M and the Newton block dD1Ld/dq2 = dt/4 Lqq +
// 1/2 (Lqv - Lqv^T) - M/dt - C -- have an entry (a, b) only when joint a is an ancestor of joint b
// or b of a (two joints in different branches share no moving body).  Eliminating the variables
// leaves first (deepest first) creates no fill: eliminating joint k updates only entries between
// its ancestors, which are pairwise comparable.  This is the factorisation of Featherstone,
// "Efficient Factorization of the Joint-Space Inertia Matrix for Branched Kinematic Trees", IJRR
// 2005, applied to an unsymmetric matrix of the same pattern (elimination U L instead of L^T L):
// for the 25 joints of marionette25 it costs sum_k depth_k^2 ~ 1.6 k multiply-adds against the
// ~10 k of a dense LU.
//
// No pivoting: the integrator's matrices are dominated by M/dt (symmetric positive definite), so
// elimination in any order is stable; factor() refuses a pivot that is not (non-finite, or
// smaller than 1e-13 of its row's scale) and the caller falls back to a pivoting dense LU.
#pragma once

#include <Eigen/Core>
#include <vector>

#include "marionette/models/model.hpp"

namespace marionette {

class TreeLu {
 public:
  explicit TreeLu(const Model& model);

  // Factorises A (n_d x n_d; entries off the tree pattern are ignored, they must be zero).
  // False if a pivot is unsafe; the factorisation is then unusable.
  bool factor(const Eigen::MatrixXd& A);
  // The factorisation is E A = R: E the elimination's row operations (leaves first), R lower
  // triangular in root-first order (row k: the pivot and k's ancestors).  A^-1 = R^-1 E.
  // b <- A^-1 b.
  template <class Vector>
  void solveInPlace(Vector&& b) const {
    applyE(b);
    applyRInverse(b);
  }
  // b <- E b.  A vector supported on a path from the root stays on it (zeros are skipped).
  template <class Vector>
  void applyE(Vector&& b) const;
  // b <- R^-1 b.
  template <class Vector>
  void applyRInverse(Vector&& b) const;
  // g <- R^-T g.  Here too a vector on a root path stays on it.
  template <class Vector>
  void applyRInverseTransposed(Vector&& g) const;

 private:
  int n_ = 0;
  // Per variable k, its strict ancestors root first (chain_[start_[k] .. start_[k+1])); since
  // they form a path, the j-th ancestor's own ancestors are the first j.  Column k's entries at
  // those rows (the multipliers once k is eliminated), row k's at those columns, and the
  // diagonal, stored alike so that every update is a contiguous axpy.
  std::vector<int> start_, chain_;
  std::vector<double> col_, row_, diag_, scale_;
  std::vector<int> deepest_first_;  // elimination order
};

template <class Vector>
void TreeLu::applyE(Vector&& b) const {
  // The row operations of the elimination, deepest first (b_k is final when k is).
  for (int k : deepest_first_) {
    const double bk = b[k];
    if (bk == 0.0) continue;
    for (int i = start_[k]; i < start_[k + 1]; ++i) b[chain_[i]] -= col_[i] * bk;
  }
}

template <class Vector>
void TreeLu::applyRInverse(Vector&& b) const {
  // Back substitution, root first.
  for (auto it = deepest_first_.rbegin(); it != deepest_first_.rend(); ++it) {
    const int k = *it;
    double s = b[k];
    for (int i = start_[k]; i < start_[k + 1]; ++i) s -= row_[i] * b[chain_[i]];
    b[k] = s / diag_[k];
  }
}

template <class Vector>
void TreeLu::applyRInverseTransposed(Vector&& g) const {
  // R^T is upper triangular in root-first order: solve leaves first.
  for (int k : deepest_first_) {
    if (g[k] == 0.0) continue;
    const double yk = g[k] / diag_[k];
    g[k] = yk;
    for (int i = start_[k]; i < start_[k + 1]; ++i) g[chain_[i]] -= row_[i] * yk;
  }
}

}  // namespace marionette
