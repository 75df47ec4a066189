// SPDX-License-Identifier: BSD-3-Clause
// TranscriptionProblem's Lagrangian Hessian (transcription_problem.hpp says which terms).
#include <cmath>

#include "transcription_problem.hpp"

namespace marionette::detail {
void TranscriptionProblem::declareHessian() {
  const Model& m = *setup_.model;
  const int nstops = nc_ - nu_;
  // A knot's block: the swing's mass matrix (the tree's couplings), the rig's diagonal, each
  // string's and contact's curvature on its variables, a point goal's J^T J on its points'
  // chains.
  Pattern xx = Pattern::Constant(nq_, nq_, false), lambda_x = Pattern::Constant(nc_, nq_, false);
  Pattern friction_x = Pattern::Constant(2 * nt_, nq_, false);
  xx.topLeftCorner(nd_, nd_) = coupled_;
  for (int i = nd_; i < nq_; ++i) xx(i, i) = true;
  for (int j = 0; j < ns_; ++j)
    for (int a : string_vars_[j]) {
      lambda_x(j, a) = true;
      for (int b : string_vars_[j]) xx(a, b) = true;
    }
  for (int t = 0; t < nt_; ++t)
    for (int a : contact_vars_[t]) {
      lambda_x(ns_ + t, a) = friction_x(2 * t, a) = friction_x(2 * t + 1, a) = true;
      for (int b : contact_vars_[t]) xx(a, b) = true;
    }
  for (int a : goal_point_vars_)
    for (int b : goal_point_vars_) xx(a, b) = true;
  for (int a : track_point_vars_)
    for (int b : track_point_vars_) xx(a, b) = true;
  for (int v : setup_.track_variables) xx(v, v) = true;
  // The closed loop's momenta couple every joint of neighbouring knots (M^-1 is dense).
  const bool momenta = setup_.state_tracking.active() && setup_.state_tracking.weights.velocity > 0;
  const Pattern qq_prev = momenta ? Pattern::Constant(nd_, nd_, true) : coupled_;
  if (momenta) xx.topLeftCorner(nd_, nd_).setConstant(true);
  Pattern stop_next = Pattern::Constant(nstops, nd_, false);
  for (int r = 0; r < nstops; ++r) stop_next(r, m.stops[r].variable) = true;
  hessian_blocks_.assign(N_ + 1, {});
  for (int k = 1; k <= N_; ++k) {
    HessianBlocks& b = hessian_blocks_[k];
    b.xx = hessian_.lower(xAt(k), xx);
    if (k >= 2) b.qq_prev = hessian_.dense(xAt(k), xAt(k - 1), qq_prev);
    if (k >= 2 && nk_ > 0) b.rho_prev = hessian_.diagonal(xAt(k) + nd_, xAt(k - 1) + nd_, nk_);
  }
  for (int k = 0; k < N_; ++k) {
    HessianBlocks& b = hessian_blocks_[k];
    if (k >= 1 && nu_ > 0) b.lambda_x = hessian_.dense(lambdaAt(k), xAt(k), lambda_x);
    if (k >= 1 && nt_ > 0) b.friction_x = hessian_.dense(frictionAt(k), xAt(k), friction_x);
    if (nstops > 0) b.stop_next = hessian_.dense(lambdaAt(k) + nu_, xAt(k + 1), stop_next);
    if (nc_ > 0) b.lambda_lambda = hessian_.diagonal(lambdaAt(k), lambdaAt(k), nc_);
    if (k >= 1 && nc_ > 0) b.lambda_prev = hessian_.diagonal(lambdaAt(k), lambdaAt(k - 1), nc_);
    if (nu_ > 0) b.slack_lambda = hessian_.diagonal(slackAt(k), lambdaAt(k), nu_);
    if (nk_ > 0) b.accel = hessian_.diagonal(accelAt(k), accelAt(k), nk_);
    if (k >= 1 && nk_ > 0) b.accel_prev = hessian_.diagonal(accelAt(k), accelAt(k - 1), nk_);
  }
}

void TranscriptionProblem::addRigHessian(int a, int b, int i, double c) {
  if (b < 1) return;
  if (a == b)
    hessian_.values(hessian_blocks_[a].xx)(nd_ + i, nd_ + i) += c;
  else
    hessian_.values(hessian_blocks_[a].rho_prev)(i, 0) += c;
}

void TranscriptionProblem::hessian(const Eigen::VectorXd& z, double sigma,
                                   const Eigen::VectorXd& y, double* values) {
  (void)z;
  const Model& m = *setup_.model;
  const double dt = setup_.integrator.dt_s;
  const OptimizationWeights& w = setup_.weights;
  hessian_.setZero();
  auto xx = [&](int k) { return hessian_.values(hessian_blocks_[k].xx); };

  // The objective: the swing's mass matrix, the rig's effort and jerk stencils.
  const Eigen::MatrixXd M = (sigma / (energy_ref_J_ * dt)) * mass_ref_;
  for (int k = 0; k < N_; ++k) {
    const Eigen::MatrixXd S = swingWeight(k) * M;
    xx(k + 1).topLeftCorner(nd_, nd_) += S;
    if (k >= 1) {
      xx(k).topLeftCorner(nd_, nd_) += S;
      hessian_.values(hessian_blocks_[k + 1].qq_prev) -= S;
    }
  }
  for (int i = 0; i < nk_; ++i) {
    const double speed_ref = speed_ref_[i], jerk_ref = jerk_ref_[i];
    const double effort = sigma * 2 * w.effort / (dt * speed_ref * speed_ref);
    const double jerk = sigma * 2 * w.jerk / (std::pow(dt, 5) * jerk_ref * jerk_ref);
    for (int k = 0; k < N_; ++k) {
      addRigHessian(k + 1, k + 1, i, effort);
      addRigHessian(k, k, i, effort);
      addRigHessian(k + 1, k, i, -effort);
      // The jerk (a_k - a_{k-1})^2.
      hessian_.values(hessian_blocks_[k].accel)(i, 0) += jerk;
      if (k == 0) continue;
      hessian_.values(hessian_blocks_[k - 1].accel)(i, 0) += jerk;
      hessian_.values(hessian_blocks_[k].accel_prev)(i, 0) -= jerk;
    }
  }
  // The multipliers' rate and the complementarity's bilinear terms.
  for (int k = 0; k < N_; ++k) {
    const HessianBlocks& b = hessian_blocks_[k];
    for (int c = 0; c < ns_; ++c) {
      const double scale = rate_scale_[c];
      const double t = sigma * 2 * w.tension_rate * dt * scale * scale;
      if (k + 1 < N_) {
        hessian_.values(b.lambda_lambda)(c, 0) += t;
        hessian_.values(hessian_blocks_[k + 1].lambda_lambda)(c, 0) += t;
        hessian_.values(hessian_blocks_[k + 1].lambda_prev)(c, 0) -= t;
      }
    }
    for (int c = 0; c < nu_; ++c)
      hessian_.values(b.slack_lambda)(c, 0) +=
          sigma * w.complementarity / (lambda_ref_[c] * gap_unit_[c]);
    for (int r = 0; r < nc_ - nu_; ++r) {
      const Model::StopRow& stop = m.stops[r];
      hessian_.values(b.stop_next)(r, stop.variable) +=
          -sigma * w.complementarity * stop.sign / (lambda_ref_[nu_ + r] * gap_unit_[nu_ + r]);
    }
  }

  // The rows: the strings' and contacts' curvature at the end of each step, the constraint
  // force's coupling (the contacts' from the knot's central differences; the slip rows'
  // curvature is left out, zero where a contact sticks but for its basis' turn).
  Eigen::MatrixXd H, C;
  for (int k = 0; k < N_ && nu_ > 0; ++k) {
    const Eigen::VectorXd ys = y.segment(gap_row_ + k * nu_, ns_);
    if (!ys.isZero()) {
      mechanics_.stringCurvature(q_[k + 1], ys, H);
      xx(k + 1) += H;
    }
    for (int t = 0; t < nt_; ++t)
      xx(k + 1).topLeftCorner(nd_, nd_) +=
          y[gap_row_ + k * nu_ + ns_ + t] * knots_[k + 1].gap_hessian[t];
    const Eigen::VectorXd yd = y.segment(del_row_ + k * nd_, nd_);
    if (k >= 1 && !yd.isZero()) {
      mechanics_.forceCoupling(q_[k], yd, C);
      for (int t = 0; t < nt_; ++t) {
        C.row(ns_ + t).head(nd_) = yd.transpose() * knots_[k].gap_hessian[t];
        for (int j = 0; j < 2; ++j)
          hessian_.values(hessian_blocks_[k].friction_x).row(2 * t + j).head(nd_) =
              -yd.transpose() * knots_[k].friction_q[2 * t + j];
      }
      hessian_.values(hessian_blocks_[k].lambda_x) = -C;
    }
  }
  // A point goal's rows, 1/2 |p - target|^2: J^T J of the point.
  for (std::size_t r = 0; r < goal_point_jacobians_.size(); ++r)
    xx(goal_knot_).noalias() += y[goal_row_ + static_cast<int>(r)] *
                                (goal_point_jacobians_[r].transpose() * goal_point_jacobians_[r]);
  // The targets' Gauss-Newton curvature: 2 c weight J^T J of each point (its own curvature left
  // out), a variable's 2 c weight s^2.
  const double c = sigma * 2 * w.tracking * dt / (kTrack_m * kTrack_m);
  const int P = static_cast<int>(setup_.track_points.size());
  for (int k = 1; k <= N_; ++k) {
    for (int i = 0; i < P; ++i) {
      const Eigen::MatrixXd& J = track_jacobians_[k * P + i];
      const double weight = trackPointWeight(k, i);
      xx(k).noalias() += (c * weight) * (J.transpose() * J);
    }
    for (std::size_t i = 0; i < setup_.track_variables.size(); ++i) {
      if (!std::isfinite(setup_.track_values(k, static_cast<Eigen::Index>(i)))) continue;
      const double s = setup_.track_variable_scale_m[i];
      const double weight =
          setup_.track_variable_weight.empty() ? 1.0 : setup_.track_variable_weight[i];
      const int v = setup_.track_variables[i];
      xx(k)(v, v) += c * weight * s * s;
    }
  }
  addStateTrackingHessian(sigma);
  hessian_.copyValues(values);
}

}  // namespace marionette::detail
