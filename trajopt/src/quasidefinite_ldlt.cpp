// SPDX-License-Identifier: BSD-3-Clause
#include "quasidefinite_ldlt.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Dense>

namespace marionette::detail {

bool QuasidefiniteLdlt::factorize(const Eigen::Ref<const Eigen::MatrixXd>& A, int p) {
  const Eigen::Index n = A.rows(), r = n - p;
  p_ = p;
  L_ = A;  // (lower triangle used; allocation only when the size grows)
  auto P = L_.topLeftCorner(p, p);
  auto Y = L_.bottomLeftCorner(r, p);
  auto T = L_.bottomRightCorner(r, r);
  if (p > 0) {
    Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> cholesky_p(P);  // in place: P's lower triangle is L_P
    if (cholesky_p.info() != Eigen::Success) return false;
    // Y = Q L_P^-T, that is X^T.
    P.triangularView<Eigen::Lower>().transpose().solveInPlace<Eigen::OnTheRight>(Y);
  }
  if (r == 0) return true;
  // T = X^T X - R = Y Y^T - R, its lower triangle.
  T.triangularView<Eigen::Lower>() = -T;
  if (p > 0) T.selfadjointView<Eigen::Lower>().rankUpdate(Y, 1.0);
  Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>> cholesky_t(T);
  return cholesky_t.info() == Eigen::Success;
}

void QuasidefiniteLdlt::solveInPlace(Eigen::Ref<Eigen::MatrixXd> B) const {
  L_.triangularView<Eigen::Lower>().solveInPlace(B);
  B.bottomRows(B.rows() - p_) *= -1.0;
  L_.triangularView<Eigen::Lower>().transpose().solveInPlace(B);
}

void QuasidefiniteLdlt::solveVectorInPlace(Eigen::Ref<Eigen::VectorXd> b) const {
  L_.triangularView<Eigen::Lower>().solveInPlace(b);
  b.tail(b.size() - p_) *= -1.0;
  L_.triangularView<Eigen::Lower>().transpose().solveInPlace(b);
}

void QuasidefiniteLdlt::subtractQuadratic(const Eigen::Ref<const Eigen::MatrixXd>& B,
                                          Eigen::Ref<Eigen::MatrixXd> S,
                                          Eigen::MatrixXd& work) const {
  // B^T A^-1 B = W^T diag(I, -I) W with W = L^-1 B.
  work = B;
  L_.triangularView<Eigen::Lower>().solveInPlace(work);
  const Eigen::Index r = work.rows() - p_;
  if (p_ > 0) S.selfadjointView<Eigen::Lower>().rankUpdate(work.topRows(p_).transpose(), -1.0);
  if (r > 0) S.selfadjointView<Eigen::Lower>().rankUpdate(work.bottomRows(r).transpose(), 1.0);
}

}  // namespace marionette::detail
