// SPDX-License-Identifier: BSD-3-Clause
// TranscriptionProblem's StateTracking cost: the closed loop's LQR cost on the transcription's
// variables (transcription_problem.hpp writes it out), its gradient and its Gauss-Newton
// curvature (exact but for the momenta's own curvature: dp = D2_a dq_{k-1} + D2_b dq_k).
#include "transcription_problem.hpp"

namespace marionette::detail {

double TranscriptionProblem::rigDeviation(int k, int i) const {
  return rigAt(k, i) - setup_.state_tracking.rho(k + 2, i);
}

void TranscriptionProblem::addStateTrackingCosts(const Eigen::VectorXd& z, bool derivatives) {
  const StateTracking& t = setup_.state_tracking;
  if (!t.active()) return;
  const control::LqrWeights& w = t.weights;
  const double dt2 = setup_.integrator.dt_s * setup_.integrator.dt_s;
  const double rate = w.correction_rate / dt2, accel = w.correction_accel / (dt2 * dt2);
  // The joints and their momenta at knots 1..N (knot 0's are the start's: constant).
  for (int k = 1; k <= N_; ++k) {
    const double f = k == N_ ? w.terminal : 1.0;
    const Eigen::VectorXd dq = q_[k].head(nd_) - t.q.row(k).transpose();
    cost_ += f * w.position * dq.squaredNorm();
    if (derivatives) gradient_.segment(xAt(k), nd_) += (2 * f * w.position) * dq;
    if (w.velocity == 0) continue;
    const IntervalTerms& in = intervals_[k - 1];
    const Eigen::VectorXd dp = in.D2 - t.p.row(k).transpose();
    const Eigen::VectorXd W_dp = t.velocity_metric[k] * dp;
    cost_ += f * w.velocity * dp.dot(W_dp);
    if (!derivatives) continue;
    gradient_.segment(xAt(k), nd_).noalias() += (2 * f * w.velocity) * (in.D2_b.transpose() * W_dp);
    if (k >= 2)
      gradient_.segment(xAt(k - 1), nd_).noalias() +=
          (2 * f * w.velocity) * (in.D2_a.transpose() * W_dp);
  }
  // The rig's deviation and the corrections' size, rate and acceleration.
  auto add = [&](int knot, int i, double c) {
    if (derivatives && knot >= 1) gradient_[xAt(knot) + nd_ + i] += c;
  };
  for (int i = 0; i < nk_; ++i) {
    auto d = [&](int k) { return rigDeviation(k, i); };
    for (int k = 1; k <= N_; ++k) {
      const double f = k == N_ ? w.terminal : 1.0;
      cost_ += f * w.rig * d(k) * d(k);
      add(k, i, 2 * f * w.rig * d(k));
    }
    for (int k = 0; k < N_; ++k) {
      // The correction's second difference d(k+1) - 2 d(k) + d(k-1): a_k less the reference's.
      const double reference =
          t.rho(k + 3, i) - 2 * t.rho(k + 2, i) + t.rho(k + 1, i);
      const double u = d(k + 1), r = d(k + 1) - d(k), a = z[accelAt(k) + i] - reference;
      cost_ += w.correction * u * u + rate * r * r + accel * a * a;
      add(k + 1, i, 2 * (w.correction * u + rate * r));
      add(k, i, -2 * rate * r);
      if (derivatives) gradient_[accelAt(k) + i] += 2 * accel * a;
    }
    const double r = d(N_), a = d(N_ - 1) - 2 * d(N_);
    cost_ += w.terminal * (rate * r * r + accel * a * a);
    add(N_, i, w.terminal * (2 * rate * r - 4 * accel * a));
    add(N_ - 1, i, w.terminal * 2 * accel * a);
  }
}

void TranscriptionProblem::addStateTrackingHessian(double sigma) {
  const StateTracking& t = setup_.state_tracking;
  if (!t.active()) return;
  const control::LqrWeights& w = t.weights;
  const double dt2 = setup_.integrator.dt_s * setup_.integrator.dt_s;
  const double rate = w.correction_rate / dt2, accel = w.correction_accel / (dt2 * dt2);
  auto xx = [&](int k) { return hessian_.values(hessian_blocks_[k].xx); };
  for (int k = 1; k <= N_; ++k) {
    const double f = sigma * 2 * (k == N_ ? w.terminal : 1.0);
    xx(k).topLeftCorner(nd_, nd_).diagonal().array() += f * w.position;
    if (w.velocity == 0) continue;
    const IntervalTerms& in = intervals_[k - 1];
    const Eigen::MatrixXd W_b = t.velocity_metric[k] * in.D2_b;
    xx(k).topLeftCorner(nd_, nd_).noalias() += (f * w.velocity) * (in.D2_b.transpose() * W_b);
    if (k < 2) continue;
    xx(k - 1).topLeftCorner(nd_, nd_).noalias() +=
        (f * w.velocity) * (in.D2_a.transpose() * t.velocity_metric[k] * in.D2_a);
    hessian_.values(hessian_blocks_[k].qq_prev).noalias() +=
        (f * w.velocity) * (W_b.transpose() * in.D2_a);
  }
  // A stencil sum_j s_j rho(k - j) squared with weight c: 2 c s_j s_l on each pair.
  auto stencil = [&](int k, const double* s, int n, double c) {
    for (int i = 0; i < nk_; ++i)
      for (int p = 0; p < n; ++p)
        for (int q = p; q < n; ++q) addRigHessian(k - p, k - q, i, sigma * 2 * c * s[p] * s[q]);
  };
  const double one[1] = {1}, difference[2] = {1, -1};
  for (int k = 1; k <= N_; ++k) stencil(k, one, 1, (k == N_ ? w.terminal : 1.0) * w.rig);
  for (int k = 0; k < N_; ++k) {
    stencil(k + 1, one, 1, w.correction);
    stencil(k + 1, difference, 2, rate);
    for (int i = 0; i < nk_; ++i) hessian_.values(hessian_blocks_[k].accel)(i, 0) += sigma * 2 * accel;
  }
  const double terminal_accel[2] = {-2, 1};
  stencil(N_, one, 1, w.terminal * rate);
  stencil(N_, terminal_accel, 2, w.terminal * accel);
}

}  // namespace marionette::detail
