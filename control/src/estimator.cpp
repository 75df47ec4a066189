// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/control/estimator.hpp"

#include <Eigen/Cholesky>
#include <cmath>

#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"

namespace marionette::control {

const char* toString(ProcessModel p) {
  return p == ProcessModel::VariationalIntegrator ? "ekf" : "ekf-euler";
}

ProcessModel parseProcessModel(const std::string& name) {
  if (name == "ekf") return ProcessModel::VariationalIntegrator;
  if (name == "ekf-euler") return ProcessModel::Euler;
  throw FieldError("estimator", "'" + name + "' is not an estimator (ekf, ekf-euler)");
}

void checkEstimatorOptions(const EstimatorOptions& o) {
  auto within = [](const char* field, double v, double lo, double hi, bool zero_ok) {
    if (!(v >= lo && v <= hi) || (!zero_ok && v == 0))
      throw FieldError(field, std::string("must be in ") + (zero_ok ? "[" : "(") +
                                  formatNumber(lo) + ", " + formatNumber(hi) + "], got " +
                                  formatNumber(v));
  };
  within("dt_s", o.dt_s, 0, 1, false);
  within("damping_scale", o.damping_scale, 0, 1e3, true);
  within("position_std", o.position_std, 0, kMaxPositionStd, true);
  within("velocity_std", o.velocity_std, 0, kMaxVelocityStd, true);
  within("initial_position_std", o.initial_position_std, 0, kMaxPositionStd, false);
  within("initial_velocity_std", o.initial_velocity_std, 0, kMaxVelocityStd, false);
  if (o.history_steps < 1 || o.history_steps > 100000)
    throw FieldError("history_steps", "must be in [1, 100000]");
}

namespace {
IntegratorOptions viOptions(const EstimatorOptions& o) {
  checkEstimatorOptions(o);
  IntegratorOptions vi;
  vi.dt_s = o.dt_s;
  vi.damping_scale = o.damping_scale;
  return vi;
}
}  // namespace

Estimator::Estimator(ModelPtr model, std::shared_ptr<const MeasurementModel> measurement,
                     EstimatorOptions options)
    : model_(std::move(model)),
      measurement_(std::move(measurement)),
      options_(options),
      nd_(model_->nd()),
      nk_(model_->nk()),
      vi_(model_, viOptions(options_)),
      euler_(model_, ExplicitMethod::Euler, options_.dt_s, options_.damping_scale),
      dyn_(*model_),
      ring_(static_cast<std::size_t>(options_.history_steps) + 1) {
  for (Entry& e : ring_) {
    e.vi = vi_.makeState();
    e.euler = euler_.makeState();
    e.P = Eigen::MatrixXd::Zero(2 * nd_, 2 * nd_);
    e.u_next = Eigen::VectorXd::Zero(nk_);
  }
  F_.setZero(2 * nd_, 2 * nd_);
  Q_.setZero(2 * nd_, 2 * nd_);
  vi_view_ = vi_.makeState();
  qfull_.resize(model_->nq());
}

void Estimator::reset(const Eigen::VectorXd& q, const Eigen::VectorXd& qdot,
                      const Eigen::VectorXd& rho) {
  tick_ = 0;
  last_fused_ = -1;
  counts_ = {};
  Entry& e = at(0);
  e.vi = vi_.stateFromVelocity(q, qdot, rho);
  e.euler = {q, qdot, rho, Eigen::VectorXd::Zero(nk_)};
  // The initial uncertainty on (q, qdot), mapped to (q, p) for the VI as the process noise is.
  covarianceOf(options_.initial_position_std, options_.initial_velocity_std, q, rho, e.P);
}

void Estimator::covarianceOf(double position_std, double velocity_std, const Eigen::VectorXd& q,
                             const Eigen::VectorXd& rho, Eigen::MatrixXd& Q) {
  Q.setZero(2 * nd_, 2 * nd_);
  Q.topLeftCorner(nd_, nd_).diagonal().setConstant(position_std * position_std);
  const double sv2 = velocity_std * velocity_std;
  if (options_.process == ProcessModel::Euler) {
    Q.bottomRightCorner(nd_, nd_).diagonal().setConstant(sv2);
    return;
  }
  qfull_ << q, rho;
  forwardKinematics(*model_, dyn_, qfull_);
  computeLagrangian(*model_, dyn_, qfull_, Eigen::VectorXd::Zero(nd_), LagrangianOrder::MassMatrix);
  Q.bottomRightCorner(nd_, nd_).noalias() = sv2 * dyn_.M * dyn_.M.transpose();
}

StepStatus Estimator::propagate(const Entry& from, const Eigen::VectorXd& u, Entry& to) {
  ++counts_.predictions;
  StepStatus st = StepStatus::Ok;
  bool linearized = false;
  if (options_.process == ProcessModel::VariationalIntegrator) {
    st = vi_.linearizeStep(from.vi, u, lin_);
    if (st == StepStatus::Ok) {
      F_ = lin_.A.topLeftCorner(2 * nd_, 2 * nd_);
      to.vi = lin_.next;
      linearized = true;
    } else {
      State next = from.vi;
      st = vi_.step(from.vi, u, next);  // with the substep fallback
      if (st == StepStatus::Ok) to.vi = next;
      else to.vi = from.vi, to.vi.rho = u;
    }
    covarianceOf(options_.position_std, options_.velocity_std, to.vi.q, to.vi.rho, Q_);
  } else {
    ContinuousState next = from.euler;
    st = euler_.step(from.euler, u, next);
    if (st == StepStatus::Ok) {
      // F = d(step)/d(q, qdot) by central differences (what I + dt df/dx is when no impulse
      // fires within the step).
      ContinuousState plus = from.euler, minus = from.euler, out_p = next, out_m = next;
      linearized = true;
      for (int i = 0; i < 2 * nd_ && linearized; ++i) {
        Eigen::VectorXd& vp = i < nd_ ? plus.q : plus.qdot;
        Eigen::VectorXd& vm = i < nd_ ? minus.q : minus.qdot;
        const int j = i % nd_;
        const double h = 1e-6 * std::max(1.0, std::abs(vp[j]));
        vp[j] += h;
        vm[j] -= h;
        linearized = euler_.step(plus, u, out_p) == StepStatus::Ok &&
                     euler_.step(minus, u, out_m) == StepStatus::Ok;
        F_.col(i).head(nd_) = (out_p.q - out_m.q) / (2 * h);
        F_.col(i).tail(nd_) = (out_p.qdot - out_m.qdot) / (2 * h);
        vp[j] = i < nd_ ? from.euler.q[j] : from.euler.qdot[j];
        vm[j] = vp[j];
      }
      to.euler = next;
    } else {
      to.euler = from.euler;
      to.euler.rho = u;
      to.euler.rhodot.setZero();
    }
    covarianceOf(options_.position_std, options_.velocity_std, to.euler.q, to.euler.rho, Q_);
  }
  if (linearized) {
    to.P.noalias() = F_ * from.P * F_.transpose();
    to.P += Q_;
  } else {
    ++counts_.step_failures;
    to.P = from.P + Q_;
  }
  return st;
}

StepStatus Estimator::predict(const Eigen::VectorXd& u) {
  Entry& from = at(tick_);
  from.u_next = u;
  Entry& to = at(tick_ + 1);
  const StepStatus st = propagate(from, u, to);
  ++tick_;
  return st;
}

void Estimator::fuse(Entry& e, const Eigen::VectorXd& y) {
  const bool vi = options_.process == ProcessModel::VariationalIntegrator;
  Eigen::VectorXd& q = vi ? e.vi.q : e.euler.q;
  Eigen::VectorXd& s = vi ? e.vi.p : e.euler.qdot;
  const Eigen::VectorXd& rho = vi ? e.vi.rho : e.euler.rho;
  qfull_ << q, rho;
  measurement_->evaluate(dyn_, qfull_, y_pred_, &H_);
  // S = H P_qq H^T + R, K = P [H 0]^T S^-1 (H only sees q).
  const Eigen::MatrixXd PHt = e.P.leftCols(nd_) * H_.transpose();  // 2nd x m
  Eigen::MatrixXd S = H_ * PHt.topRows(nd_);
  S.diagonal() += measurement_->noiseVariance();
  const Eigen::LDLT<Eigen::MatrixXd> ldlt(S);
  innovation_ = y - y_pred_;
  nis_ = innovation_.dot(ldlt.solve(innovation_));
  const Eigen::MatrixXd K = ldlt.solve(PHt.transpose()).transpose();  // 2nd x m
  const Eigen::VectorXd dz = K * innovation_;
  q += dz.head(nd_);
  s += dz.tail(nd_);
  // Joseph form: P = (I - K Hz) P (I - K Hz)^T + K R K^T, symmetric and positive by
  // construction.
  Eigen::MatrixXd IKH = Eigen::MatrixXd::Identity(2 * nd_, 2 * nd_);
  IKH.leftCols(nd_).noalias() -= K * H_;
  Eigen::MatrixXd P = IKH * e.P * IKH.transpose();
  P.noalias() += K * measurement_->noiseVariance().asDiagonal() * K.transpose();
  e.P = 0.5 * (P + P.transpose());
}

Estimator::Fusion Estimator::update(long tick, const Eigen::VectorXd& y) {
  if (y.size() != measurement_->size())
    throw FieldError("y", "needs " + std::to_string(measurement_->size()) + " values");
  // Before the reset (tick 0) there is no estimate to fuse into.
  if (tick > tick_ || tick < 0 || tick < last_fused_ || tick < tick_ - options_.history_steps) {
    ++counts_.too_old;
    return Fusion::TooOld;
  }
  fuse(at(tick), y);
  ++counts_.updates;
  last_fused_ = tick;
  for (long t = tick; t < tick_; ++t) {
    ++counts_.repredictions;
    propagate(at(t), at(t).u_next, at(t + 1));
  }
  return Fusion::Used;
}

const Eigen::VectorXd& Estimator::q() const {
  const Entry& e = at(tick_);
  return options_.process == ProcessModel::VariationalIntegrator ? e.vi.q : e.euler.q;
}

const State& Estimator::viState() {
  const Entry& e = at(tick_);
  if (options_.process == ProcessModel::VariationalIntegrator) return e.vi;
  vi_view_ = vi_.stateFromVelocity(e.euler.q, e.euler.qdot, e.euler.rho);
  return vi_view_;
}

const Eigen::MatrixXd& Estimator::covariance() const { return at(tick_).P; }

}  // namespace marionette::control
