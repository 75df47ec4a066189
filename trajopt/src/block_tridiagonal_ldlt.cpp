// SPDX-License-Identifier: BSD-3-Clause
#include "block_tridiagonal_ldlt.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <stdexcept>

namespace marionette::detail {

void BlockTridiagonalLdlt::setStructure(const std::vector<int>& sizes,
                                        std::vector<std::vector<int>> coupled_rows,
                                        std::vector<std::vector<int>> coupled_columns,
                                        std::vector<int> definite_sizes) {
  const std::size_t M = sizes.size();
  if (coupled_rows.size() != M || coupled_columns.size() != M)
    throw std::invalid_argument("block tridiagonal: one coupling per stage");
  if (!definite_sizes.empty() && definite_sizes.size() != M)
    throw std::invalid_argument("block tridiagonal: one definite size per stage");
  for (std::size_t k = 0; k < definite_sizes.size(); ++k)
    if (definite_sizes[k] < 0 || definite_sizes[k] > sizes[k])
      throw std::invalid_argument("block tridiagonal: definite size");
  definite_sizes_ = std::move(definite_sizes);
  sizes_ = sizes;
  offsets_.assign(M + 1, 0);
  for (std::size_t k = 0; k < M; ++k) offsets_[k + 1] = offsets_[k] + sizes[k];
  total_ = offsets_[M];
  rows_ = std::move(coupled_rows);
  columns_ = std::move(coupled_columns);
  if (M > 0) rows_[0].clear(), columns_[0].clear();
  A_.resize(M);
  C_.resize(M);
  factors_.assign(M, BunchKaufman(*kernels_));
  quasidefinite_.assign(M, QuasidefiniteLdlt(*kernels_));
  unpivoted_.assign(M, 0);
  Eigen::Index widest = 0, most_rows = 0;
  for (std::size_t k = 0; k < M; ++k) {
    widest = std::max<Eigen::Index>(widest, sizes[k]);
    most_rows = std::max<Eigen::Index>(most_rows, static_cast<Eigen::Index>(rows_[k].size()));
  }
  gathered_.resize(widest, most_rows);
  update_.resize(most_rows, most_rows);
  work_.resize(widest, most_rows);
  for (std::size_t k = 0; k < M; ++k) {
    A_[k].setZero(sizes[k], sizes[k]);
    C_[k].setZero(static_cast<Eigen::Index>(rows_[k].size()),
                  static_cast<Eigen::Index>(columns_[k].size()));
    for (int r : rows_[k])
      if (r < 0 || r >= sizes[k]) throw std::invalid_argument("block tridiagonal: coupled row");
    for (int c : columns_[k])
      if (c < 0 || c >= sizes[k - 1])
        throw std::invalid_argument("block tridiagonal: coupled column");
  }
}

void BlockTridiagonalLdlt::setKernels(const DenseKernels& kernels) {
  kernels_ = &kernels;
  for (auto& f : factors_) f.setKernels(kernels);
  for (auto& q : quasidefinite_) q.setKernels(kernels);
}

void BlockTridiagonalLdlt::couplingProduct(int k, const Eigen::VectorXd& v, bool transposed) const {
  const Eigen::MatrixXd& C = C_[k];
  product_.setZero(transposed ? C.cols() : C.rows());
  if (transposed)
    kernels_->multiply_add_transposed(C.data(), C.rows(), C.cols(), C.rows(), v.data(),
                                      product_.data(), 1.0);
  else
    kernels_->multiply_add(C.data(), C.rows(), C.cols(), C.rows(), v.data(), product_.data(), 1.0);
}

void BlockTridiagonalLdlt::setZero() {
  for (auto& A : A_) A.setZero();
  for (auto& C : C_) C.setZero();
}

int BlockTridiagonalLdlt::unpivotedStages() const {
  int count = 0;
  for (char u : unpivoted_) count += u;
  return count;
}

const Inertia& BlockTridiagonalLdlt::factorize(double relative_zero_pivot, bool pivoted,
                                               const Inertia& most) {
  inertia_ = Inertia{};
  unpivoted_.assign(unpivoted_.size(), 0);
  const int M = stages();
  for (int k = 0; k < M; ++k) {
    const std::vector<int>& R = rows_[k];
    const bool coupled = k > 0 && !R.empty() && !columns_[k].empty();
    if (coupled) {
      // update_ <- -C~ S_{k-1}^-1 C~^T, S_k's change at (R, R), C~ the coupled block: B = C~^T
      // scattered into the previous stage's rows.
      const std::vector<int>& F = columns_[k];
      const Eigen::Index n = sizes_[k - 1], r = static_cast<Eigen::Index>(R.size());
      // (Blocks of buffers sized once by setStructure: no allocation here.)
      auto gathered = gathered_.topLeftCorner(n, r);
      gathered.setZero();
      for (std::size_t j = 0; j < F.size(); ++j)
        gathered.row(F[j]) = C_[k].col(static_cast<Eigen::Index>(j)).transpose();
      auto update = update_.topLeftCorner(r, r);
      update.setZero();
      if (unpivoted_[k - 1])
        quasidefinite_[k - 1].subtractQuadratic(gathered, update, work_);
      else
        factors_[k - 1].subtractQuadratic(gathered, update, work_);
    }
    // S_k = A_k + update_ at (R, R), written where it is factored (its lower triangle).
    auto complement = [&](Eigen::MatrixXd& S) {
      S = A_[k];
      if (!coupled) return;
      for (std::size_t j = 0; j < R.size(); ++j)
        for (std::size_t i = j; i < R.size(); ++i) S(R[i], R[j]) += update_(i, j);
    };
    if (!pivoted && !definite_sizes_.empty()) {
      complement(quasidefinite_[k].matrix());
      if (quasidefinite_[k].factorizeInPlace(definite_sizes_[k])) {
        unpivoted_[k] = 1;
        inertia_.positive += definite_sizes_[k];
        inertia_.negative += sizes_[k] - definite_sizes_[k];
        if (inertia_.positive > most.positive || inertia_.negative > most.negative)
          return inertia_;
        continue;
      }
    }
    complement(S_);
    double largest = 0.0;
    for (Eigen::Index j = 0; j < S_.cols(); ++j)
      largest = std::max(largest, S_.col(j).tail(S_.rows() - j).cwiseAbs().maxCoeff());
    factors_[k].factorize(S_, relative_zero_pivot * largest);
    const Inertia& stage = factors_[k].inertia();
    inertia_.positive += stage.positive;
    inertia_.negative += stage.negative;
    inertia_.zero += stage.zero;
    // Singular: the later stages' complements would divide by the zero pivot.
    if (stage.zero > 0) return inertia_;
    if (inertia_.positive > most.positive || inertia_.negative > most.negative) return inertia_;
  }
  return inertia_;
}

void BlockTridiagonalLdlt::solveInPlace(Eigen::Ref<Eigen::VectorXd> b) const {
  const int M = stages();
  // Forward: w_k = b_k - C_k u_{k-1}, u_k = S_k^-1 w_k (u over b).
  for (int k = 0; k < M; ++k) {
    auto bk = b.segment(offsets_[k], sizes_[k]);
    if (k > 0 && C_[k].size() > 0) {
      const auto previous = b.segment(offsets_[k - 1], sizes_[k - 1]);
      coupled_vector_.resize(static_cast<Eigen::Index>(columns_[k].size()));
      for (std::size_t j = 0; j < columns_[k].size(); ++j) coupled_vector_[j] = previous[columns_[k][j]];
      couplingProduct(k, coupled_vector_, false);
      for (std::size_t i = 0; i < rows_[k].size(); ++i) bk[rows_[k][i]] -= product_[i];
    }
    solveStage(k, bk);
  }
  // Backward: x_k = u_k - S_k^-1 C_{k+1}^T x_{k+1}.
  for (int k = M - 2; k >= 0; --k) {
    if (C_[k + 1].size() == 0) continue;
    const auto next = b.segment(offsets_[k + 1], sizes_[k + 1]);
    coupled_vector_.resize(static_cast<Eigen::Index>(rows_[k + 1].size()));
    for (std::size_t i = 0; i < rows_[k + 1].size(); ++i) coupled_vector_[i] = next[rows_[k + 1][i]];
    stage_vector_.setZero(sizes_[k]);
    couplingProduct(k + 1, coupled_vector_, true);
    for (std::size_t j = 0; j < columns_[k + 1].size(); ++j)
      stage_vector_[columns_[k + 1][j]] = product_[j];
    solveStage(k, stage_vector_);
    b.segment(offsets_[k], sizes_[k]) -= stage_vector_;
  }
}

void BlockTridiagonalLdlt::solveStage(int k, Eigen::Ref<Eigen::VectorXd> b) const {
  if (unpivoted_[k])
    quasidefinite_[k].solveVectorInPlace(b);
  else
    factors_[k].solveVectorInPlace(b);
}

void BlockTridiagonalLdlt::multiplyAdd(const Eigen::Ref<const Eigen::VectorXd>& x,
                                       Eigen::Ref<Eigen::VectorXd> y) const {
  const int M = stages();
  for (int k = 0; k < M; ++k) {
    const auto xk = x.segment(offsets_[k], sizes_[k]);
    kernels_->symmetric_multiply_add(A_[k].data(), sizes_[k], sizes_[k], xk.data(),
                                     y.data() + offsets_[k]);
    if (k == 0 || C_[k].size() == 0) continue;
    // The coupling and its transpose, on the coupled entries gathered.
    const auto xp = x.segment(offsets_[k - 1], sizes_[k - 1]);
    const std::vector<int>& R = rows_[k];
    const std::vector<int>& F = columns_[k];
    coupled_vector_.resize(static_cast<Eigen::Index>(F.size()));
    for (std::size_t j = 0; j < F.size(); ++j) coupled_vector_[j] = xp[F[j]];
    couplingProduct(k, coupled_vector_, false);
    for (std::size_t i = 0; i < R.size(); ++i) y[offsets_[k] + R[i]] += product_[i];
    coupled_vector_.resize(static_cast<Eigen::Index>(R.size()));
    for (std::size_t i = 0; i < R.size(); ++i) coupled_vector_[i] = xk[R[i]];
    couplingProduct(k, coupled_vector_, true);
    for (std::size_t j = 0; j < F.size(); ++j) y[offsets_[k - 1] + F[j]] += product_[j];
  }
}

}  // namespace marionette::detail
