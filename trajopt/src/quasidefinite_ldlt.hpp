// SPDX-License-Identifier: BSD-3-Clause
// The factorization without pivoting of a symmetric quasidefinite matrix
//     A = [P  Q^T]  = L diag(I, -I) L^T,   L = [L_P       0 ]
//         [Q  R  ]                             [X^T     L_T ]
// P (p x p) positive definite, R - Q P^-1 Q^T negative definite: L_P L_P^T = P, X = L_P^-1 Q^T,
// L_T L_T^T = X^T X - R, two Cholesky factorizations and a triangular solve, all blocked
// (dense_kernels.hpp), without the pivot search of Bunch-Kaufman.  Such
// a matrix has exactly p positive and n - p negative eigenvalues, and every symmetric permutation
// of it has an LDL^T factorization with diagonal D (Vanderbei, "Symmetric quasidefinite matrices",
// SIAM J. Optim. 1995): an interior point's KKT block whose Hessian part, with its barrier terms,
// is positive definite and whose rows' Jacobian has full rank is one.  Without pivoting its
// accuracy depends on the blocks' conditioning (Gill, Saunders & Shinnerl, "On the stability of
// Cholesky factorization for symmetric quasidefinite systems", SIAM J. Matrix Anal. Appl. 1996):
// the caller checks its solves' residuals and falls back to pivoting (bunch_kaufman.hpp).
//
// Thread-compatible: one object per thread, no allocation once the size has been seen.
#pragma once

#include <Eigen/Core>

#include "dense_kernels.hpp"

namespace marionette::detail {

class QuasidefiniteLdlt {
 public:
  explicit QuasidefiniteLdlt(const DenseKernels& kernels = denseKernels()) : kernels_(&kernels) {}
  void setKernels(const DenseKernels& kernels) { kernels_ = &kernels; }

  // Factorizes the symmetric A (its lower triangle is read) with P its leading p x p block.
  // False where A is not quasidefinite with that split (a Cholesky pivot not positive); then
  // nothing else may be used.
  bool factorize(const Eigen::Ref<const Eigen::MatrixXd>& A, int p);
  // The same on the matrix written into matrix() (its lower triangle), without a copy.
  Eigen::MatrixXd& matrix() { return L_; }
  bool factorizeInPlace(int p);
  int size() const { return static_cast<int>(L_.rows()); }
  int definiteSize() const { return p_; }

  // B <- A^-1 B; b <- A^-1 b for a vector, without a matrix solve's packing.
  void solveInPlace(Eigen::Ref<Eigen::MatrixXd> B) const;
  void solveVectorInPlace(Eigen::Ref<Eigen::VectorXd> b) const;
  // The symmetric S <- S - B^T A^-1 B, its lower triangle (B: n x m, S: m x m; work: scratch,
  // grown to n x m where smaller).
  void subtractQuadratic(const Eigen::Ref<const Eigen::MatrixXd>& B, Eigen::Ref<Eigen::MatrixXd> S,
                         Eigen::MatrixXd& work) const;

 private:
  const DenseKernels* kernels_;
  Eigen::MatrixXd L_;  // lower triangular, n x n
  int p_ = 0;
};

}  // namespace marionette::detail
