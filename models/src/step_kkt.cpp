// SPDX-License-Identifier: BSD-3-Clause
#include "step_kkt.hpp"

namespace marionette {

StepKkt::StepKkt(const Model& model, int m_max) : nd_(model.nd()), tree_(model) {
  W1_.setZero(nd_, m_max);
  W2_.setZero(nd_, m_max);
  tmp_.setZero(m_max);
  tmp_nd_.setZero(nd_);
  for (int m = 0; m <= m_max; ++m) {
    schur_.emplace_back(Eigen::MatrixXd::Zero(m, m));
    schur_lu_.emplace_back(m);
    dense_lu_.emplace_back();  // sized at its first use (the fallback)
  }
}

void StepKkt::factor(const Eigen::MatrixXd& system, int m, bool dense) {
  m_ = m;
  system_ = &system;
  tree_ok_ = !dense && tree_.factor(system);
  if (!tree_ok_) {
    dense_lu_[m].compute(system.topLeftCorner(nd_ + m, nd_ + m));
    return;
  }
  if (m == 0) return;
  auto W1 = W1_.leftCols(m);
  auto W2 = W2_.leftCols(m);
  W1 = system.block(0, nd_, nd_, m);
  W2 = system.block(nd_, 0, m, nd_).transpose();
  for (int i = 0; i < m; ++i) {
    tree_.applyE(W1.col(i));
    tree_.applyRInverseTransposed(W2.col(i));
  }
  schur_[m].noalias() = W2.transpose() * W1;
  schur_[m] -= system.block(nd_, nd_, m, m);
  schur_lu_[m].compute(schur_[m]);
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
  y.noalias() = schur_lu_[m].solve(t);
  tmp_nd_.noalias() = W1_.leftCols(m) * y;
  tree_.applyRInverse(tmp_nd_);
  x -= tmp_nd_;
}

}  // namespace marionette
