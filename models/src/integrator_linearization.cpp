// SPDX-License-Identifier: BSD-3-Clause
// The step's exact linearization (A, B and the tensions' derivatives) by the implicit function
// theorem on the converged step.
#include <Eigen/QR>
#include <algorithm>
#include <cmath>

#include "variational_step.hpp"

namespace marionette {

StepStatus VariationalIntegrator::Impl::linearize(const State& x, const Eigen::VectorXd& rho_next,
                                                  Eigen::MatrixXd& A, Eigen::MatrixXd& B,
                                                  Eigen::MatrixXd* tension_x,
                                                  Eigen::MatrixXd* tension_u) {
  StepLinearization lin;
  const StepStatus st = linearizeStep(x, rho_next, lin);
  if (st != StepStatus::Ok) return st;
  A = std::move(lin.A);
  B = std::move(lin.B);
  if (tension_x) *tension_x = std::move(lin.tension_x);
  if (tension_u) *tension_u = std::move(lin.tension_u);
  return StepStatus::Ok;
}

StepStatus VariationalIntegrator::Impl::linearizeStep(const State& x,
                                                      const Eigen::VectorXd& rho_next,
                                                      StepLinearization& out) {
  // The exact linearization is of the single step (a step that needs substeps reports
  // NotConverged here).
  if (out.next.q.size() != nd_) out.next = makeState();
  h_ = options_.dt_s;
  const StepStatus st = stepOnce(x, rho_next, out.next, &out.report);
  if (st != StepStatus::Ok) return st;
  Eigen::MatrixXd& A = out.A;
  Eigen::MatrixXd& B = out.B;
  const double dt = options_.dt_s;
  const int nq = nd_ + nk_, nx = 2 * nd_ + nk_, m = static_cast<int>(active_.size());

  // Second derivatives of the strings and contacts at q_k (for d(G(q_k)^T lambda)/d(q_k, rho_k)).
  forwardKinematics(*model_, dyn_, q1_full_);
  computeStrings(*model_, dyn_, q1_full_, false);
  rigm_valid_ = false;  // dyn_ now holds q_k's rig
  Eigen::MatrixXd lambdaD2h = Eigen::MatrixXd::Zero(nq, nq);
  for (int c : active_) {
    if (c < ns_) {
      addStringHessian(*model_, dyn_, c, lambda_[c], lambdaD2h);
    } else if (c >= contact_row_ && c < facet_id0_) {
      // A contact, g = offset + r - n . p(q): D2g = -n . D2p; its friction, the force
      // + J^T t lambda_t: as a row g_t = -t . p.  (Self-contacts below.)
      const int contact = c < nc_ ? c : contactOfId(c);
      if (contact >= self_row_) continue;
      const ContactPoint& point = contactPoint(contact);
      const Eigen::Vector3d direction =
          c < nc_ ? contactSurface(c).normal
                  : Eigen::Vector3d(tangentsOf(contact).col((c - nc_) % 2));
      addPointNormalHessian(*model_, dyn_, point.frame, point.local_m, direction, -lambda_[c],
                            lambdaD2h);
    }  // (stops are linear, facets have no force)
  }
  // A self-contact's normal and tangents turn with the two links: its impulse's derivative by
  // central differences of its exact gradient at q_k (the rows' friction basis with them), and
  // its slip rows' too (their basis is the normal's at q_k; a segment row's point, the deepest
  // at q_k, moves along its capsule with q_k: its place at q_{k+1} too, from the poses there).
  std::vector<int> self_active;
  for (int c : active_)
    if (c >= self_row_ && c < nc_) self_active.push_back(c);
  Eigen::MatrixXd self_slip_dq1;  // 2 rows per self row in self_active, n_d
  if (!self_active.empty()) {
    constexpr double kStep = 1e-6;  // rad or m: truncation ~1e-12, rounding ~1e-10 relative
    DynamicsData fd(*model_);
    self_slip_dq1.setZero(2 * self_active.size(), nd_);
    Eigen::VectorXd q = q1_full_;
    for (int j = 0; j < nd_; ++j) {
      for (int side = -1; side <= 1; side += 2) {
        q[j] = q1_full_[j] + side * kStep;
        forwardKinematics(*model_, fd, q);
        for (std::size_t i = 0; i < self_active.size(); ++i) {
          const int c = self_active[i];
          const Eigen::Vector2d lambda_t =
              hasFriction(c) ? Eigen::Vector2d(lambda_[tangentId(c, 0)], lambda_[tangentId(c, 1)])
                             : Eigen::Vector2d::Zero();
          lambdaD2h.col(j).head(nd_) +=
              (0.5 * side / kStep) * selfImpulse(fd, c, lambda_[c], lambda_t);
          const SelfGeometry g = selfGeometry(fd, c);
          const Eigen::Vector3d x2 = isSegmentRow(c) ? segmentPointPosed(c, g.segment_z)
                                                     : Eigen::Vector3d(contact_p2_.col(c - contact_row_));
          self_slip_dq1.block(2 * i, j, 2, 1) +=
              (0.5 * side / kStep) * coreTangents(g.normal_core).transpose() * (x2 - g.x_core);
        }
      }
      q[j] = q1_full_[j];
    }
  }

  // The converged step's Jacobian (strings at q_{k+1}, Lagrangian at the midpoint).
  regularization_ = 0.0;
  evaluateResidual(x, rho_next, /*jacobian=*/true);
  regularization_ = kContactRegularization;

  // dF/dx and dF/du, F = [DEL residual; h_A(q2)].
  const Eigen::MatrixXd& Lqq = dyn_.Lqq;
  const Eigen::MatrixXd& Lqv = dyn_.Lqv;
  const Eigen::MatrixXd& M = dyn_.M;
  // dF = [dF/dx, dF/du], solved and multiplied as one block.
  Eigen::MatrixXd dF = Eigen::MatrixXd::Zero(nd_ + m, nx + nk_);
  auto dFdx = dF.leftCols(nx);
  auto dFdu = dF.rightCols(nk_);
  // dD1Ld/dq1 = dt/4 Lqq - 1/2 Lqv - 1/2 Lqv^T + M/dt;  df-/dq1 = +C.
  Eigen::MatrixXd dR_dq1 = 0.25 * dt * Lqq - 0.5 * (Lqv + Lqv.transpose()) + M / dt;
  // d/dq1 of -c(q_m)(q2 - q1) = +c - c'(q_m)/2 (q2 - q1).
  dR_dq1.diagonal().array() +=
      damping_now_.array() - 0.5 * damping_slope_.array() * (qd2_ - x.q).array();
  dR_dq1 -= lambdaD2h.topLeftCorner(nd_, nd_);
  dFdx.block(0, 0, nd_, nd_) = dR_dq1;
  dFdx.block(0, nd_, nd_, nd_).setIdentity();
  dFdx.block(0, 2 * nd_, nd_, nk_) = -lambdaD2h.topRightCorner(nd_, nk_);
  for (int i = 0; i < m; ++i)  // (a stop's gradient has no rig part, nor a contact's)
    if (active_[i] < ns_) dFdu.row(nd_ + i) = dyn2_.Dh.row(active_[i]).tail(nk_);
  // A slip row, t^T (p(q_{k+1}) - p(q_k)): d/dq_k = -t^T J(q_k).
  for (int i = 0; i < m; ++i) {
    const int id = active_[i];
    if (id < nc_ || id >= facet_id0_) continue;
    const int contact = contactOfId(id);
    if (contact < self_row_) {
      dFdx.block(nd_ + i, 0, 1, nd_) = -contact_F1_.row(id - nc_);
    } else {
      const auto at = std::find(self_active.begin(), self_active.end(), contact);
      if (at == self_active.end()) continue;  // (a slip row is taut only with its normal row)
      dFdx.block(nd_ + i, 0, 1, nd_) =
          self_slip_dq1.row(2 * (at - self_active.begin()) + (id - nc_) % 2);
    }
  }

  // d(q2, lambda)/d(x, u); with contacts touching, the least-norm impulses' (their rows may be
  // dependent, StepKkt).
  Eigen::MatrixXd Z;
  if (contactsActive()) {
    Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> cod(nd_ + m, nd_ + m);
    cod.setThreshold(1e-10);
    cod.compute(jac_.topLeftCorner(nd_ + m, nd_ + m));
    Z = -cod.solve(dF);
  } else {
    Z = -Eigen::PartialPivLU<Eigen::MatrixXd>(jac_.topLeftCorner(nd_ + m, nd_ + m)).solve(dF);
  }
  const auto Zx = Z.leftCols(nx);
  const auto Zu = Z.rightCols(nk_);
  // p2 = D2Ld(q1, q2): dD2Ld/dq1 = dt/4 Lqq - 1/2 Lqv + 1/2 Lqv^T - M/dt,
  //                    dD2Ld/dq2 = dt/4 Lqq + 1/2 Lqv + 1/2 Lqv^T + M/dt.
  const Eigen::MatrixXd dP_dq1 = 0.25 * dt * Lqq - 0.5 * Lqv + 0.5 * Lqv.transpose() - M / dt;
  const Eigen::MatrixXd dP_dq2 = 0.25 * dt * Lqq + 0.5 * (Lqv + Lqv.transpose()) + M / dt;

  A.setZero(nx, nx);
  B.setZero(nx, nk_);
  const Eigen::MatrixXd dP = dP_dq2 * Z.topRows(nd_);
  A.topRows(nd_) = Zx.topRows(nd_);
  A.middleRows(nd_, nd_) = dP.leftCols(nx);
  A.block(nd_, 0, nd_, nd_) += dP_dq1;
  B.topRows(nd_) = Zu.topRows(nd_);
  B.middleRows(nd_, nd_) = dP.rightCols(nk_);
  B.bottomRows(nk_).setIdentity();

  {
    // T_j = lambda_j |a_j - e_j|(q_k) / dt.  With h = 1/2 (d^2 - l^2), Dh = d dd/dq - l dl/dq,
    // and l depends only on the string's length variable (a kinematic one, or none).
    Eigen::MatrixXd& Tx = out.tension_x;
    Eigen::MatrixXd& Tu = out.tension_u;
    Tx.setZero(ns_, nx);
    Tu.setZero(ns_, nk_);
    for (int i = 0; i < m; ++i) {
      const int j = active_[i];
      if (j >= ns_) continue;  // a joint stop
      const double d = dist1_[j], lambda = std::max(0.0, lambda_[j]);
      Tx.row(j) = (d / dt) * Zx.row(nd_ + i);
      Tu.row(j) = (d / dt) * Zu.row(nd_ + i);
      Eigen::RowVectorXd dd = dyn_.Dh.row(j);  // n_q, at q_k
      const int lv = model_->strings[j].length_variable;
      if (lv >= 0) dd[lv] += dyn_.length[j];
      dd /= d;
      Tx.row(j).head(nd_) += (lambda / dt) * dd.head(nd_);
      Tx.row(j).tail(nk_) += (lambda / dt) * dd.tail(nk_);
    }
  }
  return StepStatus::Ok;
}

}  // namespace marionette
