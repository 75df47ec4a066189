// SPDX-License-Identifier: BSD-3-Clause
#include "quasidefinite_ldlt.hpp"

#include <algorithm>

namespace marionette::detail {

bool QuasidefiniteLdlt::factorize(const Eigen::Ref<const Eigen::MatrixXd>& A, int p) {
  L_ = A;  // (lower triangle used; allocation only when the size grows)
  return factorizeInPlace(p);
}

bool QuasidefiniteLdlt::factorizeInPlace(int p) {
  const long n = L_.rows(), r = n - p;
  p_ = p;
  double* const P = L_.data();
  double* const Y = L_.data() + p;  // rows p.., columns 0..p-1
  double* const T = L_.data() + p + p * n;
  const DenseKernels& k = *kernels_;
  if (p > 0) {
    if (!k.cholesky_lower(P, p, n)) return false;  // P's lower triangle is L_P
    k.solve_right_lower_transposed(P, p, n, Y, r, n);  // Y = Q L_P^-T, that is X^T
  }
  if (r == 0) return true;
  // T = X^T X - R = Y Y^T - R, its lower triangle.
  L_.bottomRightCorner(r, r).triangularView<Eigen::Lower>() = -L_.bottomRightCorner(r, r);
  if (p > 0) k.rank_update_lower(T, r, n, Y, p, n, 1.0);
  return k.cholesky_lower(T, r, n);
}

void QuasidefiniteLdlt::solveInPlace(Eigen::Ref<Eigen::MatrixXd> B) const {
  const long n = L_.rows();
  kernels_->solve_left_lower(L_.data(), n, n, false, B.data(), B.cols(), B.outerStride());
  B.bottomRows(B.rows() - p_) *= -1.0;
  kernels_->solve_left_lower_transposed(L_.data(), n, n, false, B.data(), B.cols(),
                                        B.outerStride());
}

void QuasidefiniteLdlt::solveVectorInPlace(Eigen::Ref<Eigen::VectorXd> b) const {
  const long n = L_.rows();
  kernels_->solve_left_lower(L_.data(), n, n, false, b.data(), 1, n);
  b.tail(b.size() - p_) *= -1.0;
  kernels_->solve_left_lower_transposed(L_.data(), n, n, false, b.data(), 1, n);
}

void QuasidefiniteLdlt::subtractQuadratic(const Eigen::Ref<const Eigen::MatrixXd>& B,
                                          Eigen::Ref<Eigen::MatrixXd> S,
                                          Eigen::MatrixXd& work) const {
  // B^T A^-1 B = W^T diag(I, -I) W with W = L^-1 B.
  const long n = L_.rows(), m = B.cols(), r = n - p_;
  if (work.rows() < n || work.cols() < m)
    work.resize(std::max<long>(work.rows(), n), std::max<long>(work.cols(), m));
  const long ld = work.rows();
  work.topLeftCorner(n, m) = B;
  kernels_->solve_left_lower(L_.data(), n, n, false, work.data(), m, ld);
  kernels_->rank_update_lower_transposed(S.data(), m, S.outerStride(), work.data(), p_, ld, -1.0);
  kernels_->rank_update_lower_transposed(S.data(), m, S.outerStride(), work.data() + p_, r, ld,
                                         1.0);
}

}  // namespace marionette::detail
