// SPDX-License-Identifier: BSD-3-Clause
#include "step_kkt.hpp"

#include <utility>

namespace marionette {

StepKkt::StepKkt(const Model& model, int m_max) : nd_(model.nd()), tree_(model) {
  W1_.setZero(nd_, m_max);
  W2_.setZero(nd_, m_max);
  tmp_.setZero(m_max);
  tmp_nd_.setZero(nd_);
  schur_.setZero(m_max, m_max);
  pivot_.assign(m_max, 0);
  dense_lu_.resize(m_max + 1);  // each sized at its first use (the fallback)
}

void StepKkt::factor(const Eigen::MatrixXd& system, int m, bool dense) {
  m_ = m;
  system_ = &system;
  tree_ok_ = !dense && tree_.factor(system);
  if (!tree_ok_) {
    dense_lu_[m].compute(system.topLeftCorner(nd_ + m, nd_ + m));
    return;
  }
  factorSchur(system, m);
}

bool StepKkt::refactorConstraints(const Eigen::MatrixXd& system, int m) {
  if (!tree_ok_) return false;
  m_ = m;
  system_ = &system;
  factorSchur(system, m);
  return true;
}

void StepKkt::factorSchur(const Eigen::MatrixXd& system, int m) {
  if (m == 0) return;
  auto W1 = W1_.leftCols(m);
  auto W2 = W2_.leftCols(m);
  W1 = system.block(0, nd_, nd_, m);
  W2 = system.block(nd_, 0, m, nd_).transpose();
  for (int i = 0; i < m; ++i) {
    tree_.applyE(W1.col(i));
    tree_.applyRInverseTransposed(W2.col(i));
  }
  auto S = schur_.topLeftCorner(m, m);
  S.noalias() = W2.transpose() * W1;
  S -= system.block(nd_, nd_, m, m);
  // Gaussian elimination with partial pivoting, L (unit lower) and U in S.  A zero pivot column
  // is left as it is: the solve then divides by zero and the caller sees a non-finite answer.
  for (int k = 0; k < m; ++k) {
    Eigen::Index p = 0;
    S.col(k).tail(m - k).cwiseAbs().maxCoeff(&p);
    pivot_[k] = k + static_cast<int>(p);
    if (pivot_[k] != k) S.row(k).swap(S.row(pivot_[k]));
    if (S(k, k) == 0.0 || k + 1 == m) continue;
    S.col(k).tail(m - k - 1) /= S(k, k);
    S.bottomRightCorner(m - k - 1, m - k - 1).noalias() -=
        S.col(k).tail(m - k - 1) * S.row(k).tail(m - k - 1);
  }
}

void StepKkt::solve(const Eigen::Ref<const Eigen::VectorXd>& rhs, Eigen::Ref<Eigen::VectorXd> sol) {
  const int m = m_;
  if (!tree_ok_) {
    sol.noalias() = dense_lu_[m].solve(rhs);
    return;
  }
  // x0 = J11^-1 r1;  S y = J21 x0 - r2;  x = x0 - J11^-1 J12 y = x0 - R^-1 (W1 y).
  auto x = sol.head(nd_);
  x = rhs.head(nd_);
  tree_.solveInPlace(x);
  if (m == 0) return;
  auto y = sol.tail(m);
  auto t = tmp_.head(m);
  t.noalias() = system_->block(nd_, 0, m, nd_) * x;
  t -= rhs.tail(m);
  for (int k = 0; k < m; ++k) std::swap(t[k], t[pivot_[k]]);
  const auto S = schur_.topLeftCorner(m, m);
  S.triangularView<Eigen::UnitLower>().solveInPlace(t);
  S.triangularView<Eigen::Upper>().solveInPlace(t);
  y = t;
  tmp_nd_.noalias() = W1_.leftCols(m) * y;
  tree_.applyRInverse(tmp_nd_);
  x -= tmp_nd_;
}

}  // namespace marionette
