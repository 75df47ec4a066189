// SPDX-License-Identifier: BSD-3-Clause
// The symmetric indefinite factorization P^T A P = L D L^T of a dense matrix, with the partial
// pivoting of Bunch & Kaufman, "Some stable methods for calculating inertia and solving symmetric
// linear systems", Math. Comp. 1977 (as LAPACK's dsytf2): L unit lower triangular, D block
// diagonal of 1x1 and 2x2 pivots, P a permutation.  Thread-compatible: one object per thread
// (its solves reuse a scratch matrix).  By Sylvester's law of inertia A has as many
// positive, negative and zero eigenvalues as D, so the factorization also says whether an interior
// point's KKT block has the inertia its step needs (every 2x2 pivot has one of each sign).
//
// Used on the dense per-knot blocks of block_tridiagonal_ldlt.hpp; written here rather than called
// from LAPACK because the BLAS this machine's Debian ships (OpenBLAS, single-threaded build) is not
// safe to call from several threads at once, and requests optimize in parallel
// (docs/decisions/0018).
#pragma once

#include <Eigen/Core>
#include <vector>

#include "dense_kernels.hpp"

namespace marionette::detail {

struct Inertia {
  int positive = 0, negative = 0, zero = 0;
};
inline constexpr Inertia kAnyInertia{1 << 30, 1 << 30, 1 << 30};

class BunchKaufman {
 public:
  explicit BunchKaufman(const DenseKernels& kernels = denseKernels()) : kernels_(&kernels) {}
  void setKernels(const DenseKernels& kernels) { kernels_ = &kernels; }

  // Factorizes the symmetric A (its lower triangle is read).  A pivot block whose largest entry is
  // at most `zero_pivot` (absolute) counts as a zero eigenvalue: the factorization is then
  // singular (solve() must not be used).  No allocation once the size has been seen.
  void factorize(const Eigen::Ref<const Eigen::MatrixXd>& A, double zero_pivot);
  bool singular() const { return inertia_.zero > 0; }
  const Inertia& inertia() const { return inertia_; }
  int size() const { return n_; }

  // B <- A^-1 B (columns of B solved independently); b <- A^-1 b for a vector, without a
  // matrix solve's packing.
  void solveInPlace(Eigen::Ref<Eigen::MatrixXd> B) const;
  void solveVectorInPlace(Eigen::Ref<Eigen::VectorXd> b) const;
  // The symmetric S <- S - B^T A^-1 B, its lower triangle (B: n x m, S: m x m): a Schur
  // complement, with B's rows permuted and L^-1 applied once (work: scratch, grown to n x m
  // where smaller).
  void subtractQuadratic(const Eigen::Ref<const Eigen::MatrixXd>& B, Eigen::Ref<Eigen::MatrixXd> S,
                         Eigen::MatrixXd& work) const;

 private:
  // P^T B, then L^-1 of it: W <- L^-1 P^T B.
  void forward(Eigen::Ref<Eigen::MatrixXd> W) const;
  // W <- D^-1 W.
  void applyDInverse(Eigen::Ref<Eigen::MatrixXd> W) const;
  // W <- P L^-T W.
  void backward(Eigen::Ref<Eigen::MatrixXd> W) const;

  const DenseKernels* kernels_;
  int n_ = 0;
  Eigen::MatrixXd LD_;           // L below the diagonal, D on it (and its 2x2 blocks' off-entry)
  Eigen::MatrixXd L_;            // L alone, strictly lower (its unit diagonal implied)
  mutable Eigen::MatrixXd solve_work_, scaled_;
  mutable Eigen::VectorXd solve_vector_;
  std::vector<int> perm_;        // P: row i of P^T A P is row perm_[i] of A
  std::vector<char> two_by_two_; // at the first index of each 2x2 pivot
  Inertia inertia_;
};

}  // namespace marionette::detail
