// SPDX-License-Identifier: BSD-3-Clause
#include "discrete_mechanics.hpp"

#include <stdexcept>

namespace marionette::detail {

DiscreteMechanics::DiscreteMechanics(ModelPtr model, const IntegratorOptions& options,
                                     std::vector<int> contact_rows)
    : model_(std::move(model)),
      contacts_(options.contacts),
      contact_rows_(std::move(contact_rows)),
      nd_(model_->nd()),
      nk_(model_->nk()),
      nq_(nd_ + nk_),
      ns_(model_->nstrings()),
      nt_(static_cast<int>(contact_rows_.size())),
      nc_(ns_ + nt_ + static_cast<int>(model_->stops.size())),
      data_(*model_) {
  if (nt_ > 0) {
    if (!contacts_) throw std::invalid_argument("DiscreteMechanics: contact rows without contacts");
    for (int r : contact_rows_)
      if (r < 0 || r >= contacts_->rows())
        throw std::invalid_argument("DiscreteMechanics: contact row " + std::to_string(r) +
                                    " is not one of the contacts'");
    rows_ = std::make_unique<ContactRows>(*model_, *contacts_);
  }
  damping_ = options.damping_override.size() == nd_ ? options.damping_override
                                                    : model_->dampingVector();
  damping_ *= options.damping_scale;
  qm_.setZero(nq_);
  v_.setZero(nd_);
  delta_.setZero(nd_);
  c_.setZero(nd_);
  dc_.setZero(nd_);
  hessian_.setZero(nq_, nq_);
  x_jacobian_.setZero(3, nd_);
  axis_jacobian_.setZero(3, nd_);
  for (KnotConstraints* k : {&plus_, &minus_}) {
    k->g.setZero(nc_);
    k->G.setZero(nc_, nq_);
    k->F.setZero(2 * nt_, nq_);
    k->x_q.setZero(3 * nt_, nq_);
    k->x.setZero(3, nt_);
    k->basis.setZero(3, 2 * nt_);
    k->rotation.setZero(3, 3 * nt_);
    k->t.setZero(nt_);
    k->axis.setZero(3, nt_);
    k->axis_q.setZero(3 * nt_, nq_);
  }
}

// With m = (q_a + q_b)/2, v = (q_b - q_a)/dt and Lqv(i, j) = d2L/dq_i dv_j:
//   D1 = dt/2 Lq - Lv - c(m) (q_b - q_a),   D2 = dt/2 Lq + Lv;
//   dLq/dq_b = Lqq/2 + Lqv/dt,  dLv/dq_b = Lqv^T/2 + M/dt  (q_a: the first halves, minus the rest)
//   dLq/d dt = -Lqv v/dt,       dLv/d dt = -M v/dt.
void DiscreteMechanics::interval(const Eigen::VectorXd& q_a, const Eigen::VectorXd& q_b,
                                 double dt, IntervalTerms& out, bool derivatives) {
  qm_ = 0.5 * (q_a + q_b);
  delta_ = q_b.head(nd_) - q_a.head(nd_);
  v_ = delta_ / dt;
  forwardKinematics(*model_, data_, qm_);
  computeLagrangian(*model_, data_, qm_, v_,
                    derivatives ? LagrangianOrder::Second : LagrangianOrder::First);
  jointDamping(*model_, damping_, qm_, c_, dc_);  // the integrator's (integrator_newton.cpp)
  out.D1 = 0.5 * dt * data_.Lq - data_.Lv;
  out.D1.array() -= c_.array() * delta_.array();
  out.D2 = 0.5 * dt * data_.Lq + data_.Lv;
  if (!derivatives) return;

  const Eigen::MatrixXd& M = data_.M;
  const Eigen::MatrixXd& Lqv = data_.Lqv;
  const Eigen::MatrixXd quarter = (0.25 * dt) * data_.Lqq;
  const Eigen::MatrixXd skew = 0.5 * (Lqv - Lqv.transpose());
  const Eigen::MatrixXd sym = 0.5 * (Lqv + Lqv.transpose());
  out.D1_b = quarter + skew - M / dt;
  out.D1_a = quarter - sym + M / dt;
  out.D2_b = quarter + sym + M / dt;
  out.D2_a = quarter - skew - M / dt;
  // -c(m) (q_b - q_a): d/dq_b = -c - c'/2 delta, d/dq_a = c - c'/2 delta.
  out.D1_b.diagonal().array() -= c_.array() + 0.5 * dc_.array() * delta_.array();
  out.D1_a.diagonal().array() += c_.array() - 0.5 * dc_.array() * delta_.array();

  const Eigen::VectorXd Lqv_v = Lqv * v_;
  const Eigen::VectorXd M_v_dt = M * v_ / dt;
  out.D1_dt = 0.5 * data_.Lq - 0.5 * Lqv_v + M_v_dt;
  out.D2_dt = 0.5 * data_.Lq - 0.5 * Lqv_v - M_v_dt;
}

void DiscreteMechanics::contactFrame(int t, KnotConstraints& out) {
  const int row = contact_rows_[t];
  out.g[ns_ + t] = rows_->gap(data_, row, out.G.row(ns_ + t).head(nd_));
  const ContactRows::SlipFrame frame = rows_->slipFrame(data_, row, &x_jacobian_, &axis_jacobian_);
  out.x.col(t) = frame.x;
  out.t[t] = frame.t;
  out.axis.col(t) = frame.axis;
  out.axis_q.middleRows(3 * t, 3).leftCols(nd_) = axis_jacobian_;
  out.basis.middleCols(2 * t, 2) = frame.basis;
  out.rotation.middleCols(3 * t, 3) = frame.R;
  out.x_q.middleRows(3 * t, 3).leftCols(nd_) = x_jacobian_;
  out.F.middleRows(2 * t, 2).leftCols(nd_).noalias() = frame.basis.transpose() * x_jacobian_;
}

void DiscreteMechanics::knot(const Eigen::VectorXd& q, const Eigen::VectorXd* lambda,
                             KnotConstraints& out, const Eigen::VectorXd* beta) {
  forwardKinematics(*model_, data_, q);
  computeStrings(*model_, data_, q, false);
  out.g.resize(nc_);
  out.G.setZero(nc_, nq_);
  out.g.head(ns_) = data_.h;
  out.span_m = data_.distance;
  out.G.topRows(ns_) = data_.Dh;
  out.F.setZero(2 * nt_, nq_);
  out.x_q.setZero(3 * nt_, nq_);
  out.x.resize(3, nt_);
  out.basis.resize(3, 2 * nt_);
  out.rotation.resize(3, 3 * nt_);
  out.t.setZero(nt_);
  out.axis.setZero(3, nt_);
  out.axis_q.setZero(3 * nt_, nq_);
  for (int t = 0; t < nt_; ++t) contactFrame(t, out);
  const int nu = ns_ + nt_;
  for (int r = 0; r < nc_ - nu; ++r) {
    const Model::StopRow& stop = model_->stops[r];
    out.g[nu + r] = stop.sign * (q[stop.variable] - stop.bound);
    out.G(nu + r, stop.variable) = stop.sign;
  }
  if (!lambda) return;
  // The stops' rows are linear: only the strings and the contacts curve.
  hessian_.setZero();
  for (int j = 0; j < ns_; ++j)
    if ((*lambda)[j] != 0.0) addStringHessian(*model_, data_, j, (*lambda)[j], hessian_);
  out.force_q = hessian_.topRows(nd_);
  if (nt_ == 0) return;

  // The contacts' second derivatives: central differences of their exact first derivatives
  // (a step of 1e-6 rad or m: truncation and rounding both near 1e-10 of them).
  constexpr double kStep = 1e-6;
  out.gap_hessian.assign(nt_, Eigen::MatrixXd::Zero(nd_, nd_));
  out.friction_q.assign(2 * nt_, Eigen::MatrixXd::Zero(nd_, nd_));
  out.basis_q.assign(nt_, Eigen::MatrixXd::Zero(6, nd_));
  out.t_q.setZero(nt_, nd_);
  Eigen::VectorXd qp = q;
  for (int i = 0; i < nd_; ++i) {
    for (KnotConstraints* side : {&plus_, &minus_}) {
      qp[i] = q[i] + (side == &plus_ ? kStep : -kStep);
      forwardKinematics(*model_, data_, qp);
      for (int t = 0; t < nt_; ++t) contactFrame(t, *side);
    }
    qp[i] = q[i];
    for (int t = 0; t < nt_; ++t) {
      out.gap_hessian[t].col(i) =
          (plus_.G.row(ns_ + t) - minus_.G.row(ns_ + t)).head(nd_).transpose() / (2 * kStep);
      for (int j = 0; j < 2; ++j)
        out.friction_q[2 * t + j].col(i) =
            (plus_.F.row(2 * t + j) - minus_.F.row(2 * t + j)).head(nd_).transpose() / (2 * kStep);
      const Eigen::Matrix<double, 3, 2> dB =
          (plus_.basis.middleCols(2 * t, 2) - minus_.basis.middleCols(2 * t, 2)) / (2 * kStep);
      out.basis_q[t].col(i) = Eigen::Map<const Eigen::Matrix<double, 6, 1>>(dB.data());
      out.t_q(t, i) = (plus_.t[t] - minus_.t[t]) / (2 * kStep);
    }
  }
  forwardKinematics(*model_, data_, q);
  auto force_d = out.force_q.leftCols(nd_);
  for (int t = 0; t < nt_; ++t) {
    force_d += (*lambda)[ns_ + t] * out.gap_hessian[t];
    for (int j = 0; beta && j < 2; ++j) force_d += (*beta)[2 * t + j] * out.friction_q[2 * t + j];
  }
}

void DiscreteMechanics::stringCurvature(const Eigen::VectorXd& q, const Eigen::VectorXd& w,
                                        Eigen::MatrixXd& H) {
  forwardKinematics(*model_, data_, q);
  computeStrings(*model_, data_, q, false);
  H.setZero(nq_, nq_);
  for (int j = 0; j < ns_; ++j)
    if (w[j] != 0.0) addStringHessian(*model_, data_, j, w[j], H);
}

void DiscreteMechanics::forceCoupling(const Eigen::VectorXd& q, const Eigen::VectorXd& y,
                                      Eigen::MatrixXd& C) {
  forwardKinematics(*model_, data_, q);
  computeStrings(*model_, data_, q, false);
  C.setZero(nc_, nq_);
  for (int j = 0; j < ns_; ++j) {
    hessian_.setZero();
    addStringHessian(*model_, data_, j, 1.0, hessian_);
    C.row(j) = (hessian_.leftCols(nd_) * y).transpose();
  }
}

}  // namespace marionette::detail
