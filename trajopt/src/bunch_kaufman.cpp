// SPDX-License-Identifier: BSD-3-Clause
#include "bunch_kaufman.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <utility>

namespace marionette::detail {
namespace {

// Bunch & Kaufman's threshold: the growth of the entries per pivot is bounded by (1 + 1/alpha),
// and a 2x2 pivot is chosen only where it is better than any 1x1 one.
const double kAlpha = (1.0 + std::sqrt(17.0)) / 8.0;

}  // namespace

void BunchKaufman::factorize(const Eigen::Ref<const Eigen::MatrixXd>& A, double zero_pivot) {
  const int n = static_cast<int>(A.rows());
  n_ = n;
  LD_ = A;  // (lower triangle used; allocation only when the size grows)
  perm_.resize(n);
  two_by_two_.assign(n, 0);
  for (int i = 0; i < n; ++i) perm_[i] = i;
  inertia_ = Inertia{};
  Eigen::MatrixXd& M = LD_;

  // Exchanges positions p < q of the trailing matrix (from column k on, lower triangle) and of
  // the rows of L computed so far.
  auto interchange = [&](int p, int q) {
    if (p == q) return;
    for (int j = 0; j < p; ++j) std::swap(M(p, j), M(q, j));
    for (int j = p + 1; j < q; ++j) std::swap(M(j, p), M(q, j));
    for (int i = q + 1; i < n; ++i) std::swap(M(i, p), M(i, q));
    std::swap(M(p, p), M(q, q));
    std::swap(perm_[p], perm_[q]);
  };

  int k = 0;
  while (k < n) {
    const double absakk = std::abs(M(k, k));
    int imax = k;
    double colmax = 0.0;
    if (k + 1 < n) colmax = M.col(k).tail(n - k - 1).cwiseAbs().maxCoeff(&imax), imax += k + 1;
    if (std::max(absakk, colmax) <= zero_pivot) {
      // A zero column: a zero eigenvalue, eliminated without an update.
      ++inertia_.zero;
      M.col(k).tail(n - k - 1).setZero();
      M(k, k) = 0.0;
      ++k;
      continue;
    }
    int kp = k, step = 1;
    if (absakk < kAlpha * colmax) {
      double rowmax = 0.0;
      for (int j = k; j < imax; ++j) rowmax = std::max(rowmax, std::abs(M(imax, j)));
      for (int i = imax + 1; i < n; ++i) rowmax = std::max(rowmax, std::abs(M(i, imax)));
      if (absakk >= kAlpha * colmax * (colmax / rowmax)) {
        kp = k;
      } else if (std::abs(M(imax, imax)) >= kAlpha * rowmax) {
        kp = imax;
      } else {
        kp = imax;
        step = 2;
      }
    }
    const int kk = k + step - 1;
    interchange(kk, kp);
    const int rest = n - k - step;
    if (step == 1) {
      const double d = M(k, k);
      (d > 0 ? inertia_.positive : inertia_.negative) += 1;
      if (rest > 0) {
        // Trailing update M -= l d l^T (lower), then column k holds l.
        auto w = M.col(k).tail(rest);
        for (int j = 0; j < rest; ++j) {
          const double c = w[j] / d;
          M.col(k + 1 + j).segment(k + 1 + j, rest - j) -= c * w.tail(rest - j);
        }
        w /= d;
      }
    } else {
      two_by_two_[k] = 1;
      const double d11 = M(k, k), d21 = M(k + 1, k), d22 = M(k + 1, k + 1);
      const double det = d11 * d22 - d21 * d21;
      if (det < 0) {
        ++inertia_.positive;
        ++inertia_.negative;
      } else {
        (d11 > 0 ? inertia_.positive : inertia_.negative) += 2;
      }
      if (rest > 0) {
        // W = M(k+2:, k:k+1); L = W D^-1; M -= L W^T (lower).
        auto W = M.block(k + 2, k, rest, 2);
        Eigen::Matrix2d D_inverse;
        D_inverse << d22, -d21, -d21, d11;
        D_inverse /= det;
        for (int j = 0; j < rest; ++j) {
          const Eigen::RowVector2d l = W.row(j) * D_inverse;
          M.col(k + 2 + j).segment(k + 2 + j, rest - j) -= W.bottomRows(rest - j) * l.transpose();
        }
        W = W * D_inverse;
      }
    }
    k += step;
  }
  // L alone (unit diagonal, the 2x2 pivots' off-diagonal entries D's): the solves' triangular
  // factor, blocked.
  L_ = M.triangularView<Eigen::StrictlyLower>();
  for (int j = 0; j + 1 < n; ++j)
    if (two_by_two_[j]) L_(j + 1, j) = 0.0;
}

void BunchKaufman::forward(Eigen::Ref<Eigen::MatrixXd> W) const {
  kernels_->solve_left_lower(L_.data(), n_, n_, true, W.data(), W.cols(), W.outerStride());
}

void BunchKaufman::applyDInverse(Eigen::Ref<Eigen::MatrixXd> W) const {
  for (int k = 0; k < n_; ++k) {
    if (two_by_two_[k]) {
      const double d11 = LD_(k, k), d21 = LD_(k + 1, k), d22 = LD_(k + 1, k + 1);
      const double det = d11 * d22 - d21 * d21;
      for (Eigen::Index c = 0; c < W.cols(); ++c) {
        const double a = W(k, c), b = W(k + 1, c);
        W(k, c) = (d22 * a - d21 * b) / det;
        W(k + 1, c) = (d11 * b - d21 * a) / det;
      }
      ++k;
    } else {
      W.row(k) /= LD_(k, k);
    }
  }
}

void BunchKaufman::backward(Eigen::Ref<Eigen::MatrixXd> W) const {
  kernels_->solve_left_lower_transposed(L_.data(), n_, n_, true, W.data(), W.cols(),
                                        W.outerStride());
}

void BunchKaufman::solveInPlace(Eigen::Ref<Eigen::MatrixXd> B) const {
  solve_work_.resize(n_, B.cols());
  for (int i = 0; i < n_; ++i) solve_work_.row(i) = B.row(perm_[i]);
  forward(solve_work_);
  applyDInverse(solve_work_);
  backward(solve_work_);
  for (int i = 0; i < n_; ++i) B.row(perm_[i]) = solve_work_.row(i);
}

void BunchKaufman::solveVectorInPlace(Eigen::Ref<Eigen::VectorXd> b) const {
  solve_vector_.resize(n_);
  for (int i = 0; i < n_; ++i) solve_vector_[i] = b[perm_[i]];
  kernels_->solve_left_lower(L_.data(), n_, n_, true, solve_vector_.data(), 1, n_);
  applyDInverse(solve_vector_);
  kernels_->solve_left_lower_transposed(L_.data(), n_, n_, true, solve_vector_.data(), 1, n_);
  for (int i = 0; i < n_; ++i) b[perm_[i]] = solve_vector_[i];
}

void BunchKaufman::subtractQuadratic(const Eigen::Ref<const Eigen::MatrixXd>& B,
                                     Eigen::Ref<Eigen::MatrixXd> S, Eigen::MatrixXd& work) const {
  const Eigen::Index m = B.cols();
  for (Eigen::MatrixXd* scratch : {&work, &scaled_})
    if (scratch->rows() < n_ || scratch->cols() < m)
      scratch->resize(std::max<Eigen::Index>(scratch->rows(), n_),
                      std::max<Eigen::Index>(scratch->cols(), m));
  auto W = work.topLeftCorner(n_, m);
  for (int i = 0; i < n_; ++i) W.row(i) = B.row(perm_[i]);
  forward(W);
  auto scaled = scaled_.topLeftCorner(n_, m);
  scaled = W;
  applyDInverse(scaled);
  kernels_->subtract_product_lower(S.data(), m, S.outerStride(), work.data(), work.rows(),
                                   scaled_.data(), scaled_.rows(), n_);
}

}  // namespace marionette::detail
