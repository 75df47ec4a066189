// SPDX-License-Identifier: BSD-3-Clause
// A symmetric indefinite matrix that is block tridiagonal by stages -- a transcription's KKT
// matrix ordered knot by knot, each knot's variables and rows one stage -- factored as
//     K = L diag(S_0, ..., S_{M-1}) L^T,   S_0 = A_0,   S_k = A_k - C_k S_{k-1}^-1 C_k^T,
// L block unit lower bidiagonal (L_{k,k-1} = C_k S_{k-1}^-1), each Schur complement S_k dense and
// factored with Bunch-Kaufman pivoting inside its stage (bunch_kaufman.hpp).  This is the
// structure-exploiting factorization of stagewise optimal-control KKT systems (Rao, Wright &
// Rawlings, "Application of interior-point methods to model predictive control", JOTA 1998;
// Frison & Diehl, "HPIPM: a high-performance quadratic programming framework for model predictive
// control", IFAC 2020): O(M n^3) work for M stages of n, against the fill a general sparse
// ordering leaves.  By Sylvester's law the inertia of K is the sum of the S_k's, which the
// interior point's inertia correction needs (Wachter & Biegler, Math. Prog. 2006).
//
// C_k = K[stage k, stage k-1] is given with the rows of stage k and the columns of stage k-1 that
// can be nonzero: the update works on those only.
//
// A stage whose complement is quasidefinite with its expected split -- its leading positions (a
// KKT block's variables) positive definite, the rest (its rows) negative definite after them -- is
// factored without pivoting, with Cholesky factorizations (quasidefinite_ldlt.hpp); any other
// stage with Bunch-Kaufman's pivoting, or every stage when asked.
//
// No pivoting across stages: a stage whose Schur complement is singular makes the whole
// factorization singular (the caller regularizes, as for any zero pivot).  Thread-compatible: one
// object per solve, no shared state.
#pragma once

#include <Eigen/Core>
#include <vector>

#include "bunch_kaufman.hpp"
#include "quasidefinite_ldlt.hpp"

namespace marionette::detail {

class BlockTridiagonalLdlt {
 public:
  // Stages of these sizes; coupled_rows[k] / coupled_columns[k] (k >= 1): the rows of stage k
  // and the columns of stage k-1 where C_k can be nonzero (each sorted, within its stage);
  // definite_sizes[k] (optional): how many of stage k's leading positions its quasidefinite split
  // expects positive (empty: every stage pivoted).
  void setStructure(const std::vector<int>& sizes, std::vector<std::vector<int>> coupled_rows,
                    std::vector<std::vector<int>> coupled_columns,
                    std::vector<int> definite_sizes = {});
  // The dense kernels its stages use (dense_kernels.hpp; the process's unless set).
  void setKernels(const DenseKernels& kernels);
  int stages() const { return static_cast<int>(sizes_.size()); }
  int size() const { return total_; }
  int offset(int stage) const { return offsets_[stage]; }
  int stageSize(int stage) const { return sizes_[stage]; }

  // The blocks to fill before factorize(): A_k (its lower triangle is read) and C_k (k >= 1),
  // the latter only at its coupled rows and columns (a dense |rows| x |columns| block).
  Eigen::MatrixXd& diagonal(int k) { return A_[k]; }
  Eigen::MatrixXd& coupling(int k) { return C_[k]; }
  void setZero();

  // Factorizes; a pivot no larger than relative_zero_pivot times the largest entry of its
  // stage's complement counts as a zero eigenvalue.  The inertia of K.  `pivoted`: every stage
  // with Bunch-Kaufman, none unpivoted.  Stops at the stage where the inertia so far has more
  // positive or negative eigenvalues than `most` allows (the factorization is then unusable, its
  // inertia the partial count: an interior point's inertia test fails as it would at the end).
  const Inertia& factorize(double relative_zero_pivot, bool pivoted = false,
                           const Inertia& most = kAnyInertia);
  // How many stages the last factorization did without pivoting.
  int unpivotedStages() const;
  bool singular() const { return inertia_.zero > 0; }
  const Inertia& inertia() const { return inertia_; }

  // b <- K^-1 b (b: size()), after a factorize() that is not singular.
  void solveInPlace(Eigen::Ref<Eigen::VectorXd> b) const;
  // y += K x, with the blocks as given (before factorize() overwrote nothing of them).
  void multiplyAdd(const Eigen::Ref<const Eigen::VectorXd>& x, Eigen::Ref<Eigen::VectorXd> y) const;

 private:
  void solveStage(int k, Eigen::Ref<Eigen::VectorXd> b) const;
  // product_ <- C_k v (transposed: C_k^T v).
  void couplingProduct(int k, const Eigen::VectorXd& v, bool transposed) const;

  const DenseKernels* kernels_ = &denseKernels();

  std::vector<int> sizes_, offsets_;
  int total_ = 0;
  std::vector<std::vector<int>> rows_, columns_;  // C_k's coupled rows (stage k), columns (k-1)
  std::vector<Eigen::MatrixXd> A_, C_;
  Eigen::MatrixXd S_;  // a pivoted stage's Schur complement (an unpivoted one's is in its factor)
  std::vector<int> definite_sizes_;
  std::vector<BunchKaufman> factors_;
  std::vector<QuasidefiniteLdlt> quasidefinite_;
  std::vector<char> unpivoted_;  // per stage: quasidefinite_[k] holds its factors
  Inertia inertia_;
  Eigen::MatrixXd work_, gathered_, update_;  // the widest stage's scratch
  mutable Eigen::VectorXd stage_vector_, coupled_vector_, product_;
};

}  // namespace marionette::detail
