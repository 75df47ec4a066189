// SPDX-License-Identifier: BSD-3-Clause
#include "discrete_mechanics.hpp"

namespace marionette::detail {

DiscreteMechanics::DiscreteMechanics(ModelPtr model, const IntegratorOptions& options)
    : model_(std::move(model)),
      nd_(model_->nd()),
      nk_(model_->nk()),
      nq_(nd_ + nk_),
      ns_(model_->nstrings()),
      nc_(ns_ + static_cast<int>(model_->stops.size())),
      data_(*model_) {
  damping_ = options.damping_override.size() == nd_ ? options.damping_override
                                                    : model_->dampingVector();
  damping_ *= options.damping_scale;
  qm_.setZero(nq_);
  v_.setZero(nd_);
  delta_.setZero(nd_);
  c_.setZero(nd_);
  dc_.setZero(nd_);
  hessian_.setZero(nq_, nq_);
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

void DiscreteMechanics::knot(const Eigen::VectorXd& q, const Eigen::VectorXd* lambda,
                             KnotConstraints& out) {
  forwardKinematics(*model_, data_, q);
  computeStrings(*model_, data_, q, false);
  out.g.resize(nc_);
  out.G.setZero(nc_, nq_);
  out.g.head(ns_) = data_.h;
  out.span_m = data_.distance;
  out.G.topRows(ns_) = data_.Dh;
  for (int r = 0; r < nc_ - ns_; ++r) {
    const Model::StopRow& stop = model_->stops[r];
    out.g[ns_ + r] = stop.sign * (q[stop.variable] - stop.bound);
    out.G(ns_ + r, stop.variable) = stop.sign;
  }
  if (!lambda) return;
  // The stops' rows are linear: only the strings curve.
  hessian_.setZero();
  for (int j = 0; j < ns_; ++j)
    if ((*lambda)[j] != 0.0) addStringHessian(*model_, data_, j, (*lambda)[j], hessian_);
  out.force_q = hessian_.topRows(nd_);
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
