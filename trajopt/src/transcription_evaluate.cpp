// SPDX-License-Identifier: BSD-3-Clause
// TranscriptionProblem::evaluate: the rows, their Jacobian and the objective at z
// (transcription_problem.hpp lays them out).
#include <algorithm>
#include <cmath>

#include "transcription_problem.hpp"

namespace marionette::detail {
namespace {

constexpr double kClearanceCap_m = 1;  // a clearance row reads at most this (m)

}  // namespace

bool TranscriptionProblem::evaluate(const Eigen::VectorXd& z, bool derivatives) {
  const Model& m = *setup_.model;
  const double dt = setup_.integrator.dt_s;
  for (int k = 0; k <= N_; ++k) knotConfiguration(z, k, q_[k]);
  for (int k = 0; k < N_; ++k) mechanics_.interval(q_[k], q_[k + 1], dt, intervals_[k], derivatives);
  // (Knot N's multipliers are zero: its force is no row's, its contacts' curvature the gap
  // rows'.)
  Eigen::VectorXd lambda = Eigen::VectorXd::Zero(nc_), beta = Eigen::VectorXd::Zero(2 * nt_);
  for (int k = 0; k <= N_; ++k) {
    if (k < N_) {
      lambda = z.segment(lambdaAt(k), nc_);
      beta = z.segment(frictionAt(k), 2 * nt_);
    } else {
      lambda.setZero();
      beta.setZero();
    }
    const bool curvature = derivatives && (k < N_ || nt_ > 0);
    mechanics_.knot(q_[k], curvature ? &lambda : nullptr, knots_[k], &beta);
  }

  // DEL rows.
  for (int k = 0; k < N_; ++k) {
    lambda = z.segment(lambdaAt(k), nc_);
    const auto G_d = knots_[k].G.leftCols(nd_);
    auto row = g_.segment(del_row_ + k * nd_, nd_);
    row = (k > 0 ? intervals_[k - 1].D2 : setup_.start.p) + intervals_[k].D1;
    row.noalias() -= G_d.transpose() * lambda;
    row.noalias() -= knots_[k].F.leftCols(nd_).transpose() * z.segment(frictionAt(k), 2 * nt_);
    if (!derivatives) continue;
    const DelBlocks& b = del_blocks_[k];
    if (b.previous >= 0) jacobian_.values(b.previous) = intervals_[k - 1].D2_a;
    if (b.here >= 0) {
      jacobian_.values(b.here) = intervals_[k - 1].D2_b + intervals_[k].D1_a;
      if (nu_ > 0) jacobian_.values(b.here) -= knots_[k].force_q.leftCols(nd_);
    }
    if (b.here_rig >= 0) jacobian_.values(b.here_rig) = -knots_[k].force_q.rightCols(nk_);
    jacobian_.values(b.next) = intervals_[k].D1_b;
    if (b.force >= 0) jacobian_.values(b.force) = -G_d.transpose();
    if (b.friction >= 0) jacobian_.values(b.friction) = -knots_[k].F.leftCols(nd_).transpose();
  }
  // The strings and contacts at the end of each step.
  for (int k = 0; k < N_ && nu_ > 0; ++k) {
    g_.segment(gap_row_ + k * nu_, nu_) = knots_[k + 1].g.head(nu_) + z.segment(slackAt(k), nu_);
    if (derivatives) jacobian_.values(gap_blocks_[k]) = knots_[k + 1].G.topRows(nu_);
  }
  // Each contact's slip over the step, B_k^T (x_{k+1} - x_k), and its cone.  A capsule's middle
  // slips by its material point's displacement: the point held at t_k is at x_{k+1} - (t_{k+1} -
  // t_k) axis_{k+1} (discrete_mechanics.hpp), zero for a point row.
  for (int k = 0; k < N_; ++k)
    for (int t = 0; t < nt_; ++t) {
      const KnotConstraints &here = knots_[k], &next = knots_[k + 1];
      const auto B = here.basis.middleCols(2 * t, 2);
      const double moved = next.t[t] - here.t[t];
      const Eigen::Vector3d dx = next.x.col(t) - moved * next.axis.col(t) - here.x.col(t);
      g_.segment(slip_row_ + k * 2 * nt_ + 2 * t, 2) = B.transpose() * dx;
      const double lambda_n = z[lambdaAt(k) + ns_ + t];
      g_.segment(cone_row_ + (k * nt_ + t) * kFrictionFacets, kFrictionFacets) =
          (mu_[t] * lambda_n) * Eigen::VectorXd::Ones(kFrictionFacets) -
          facet_normal_.transpose() * z.segment(frictionAt(k) + 2 * t, 2);
      // Sliding on facet f: the slip along d_f, (e_f, d_f)^T sigma.
      g_.segment(slide_row_ + k * 2 * nt_ + 2 * t, 2) = slideFrame(k, t) * (B.transpose() * dx);
      if (!derivatives) continue;
      // d/dq_{k+1}: B_k^T dx/dq there (of the material point held at t_k: x_q - moved axis_q);
      // d/dq_k: -F_k = -B_k^T dx/dq at x_k, plus the held point's place, B_k^T (axis_{k+1} -
      // axis_k) dt_k/dq, and the basis' turn dB/dq_i^T dx.
      jacobian_.values(slip_next_[k]).middleRows(2 * t, 2).leftCols(nd_) =
          B.transpose() * (next.x_q.middleRows(3 * t, 3).leftCols(nd_) -
                           moved * next.axis_q.middleRows(3 * t, 3).leftCols(nd_));
      if (k == 0) continue;
      auto here_block = jacobian_.values(slip_here_[k - 1]).middleRows(2 * t, 2).leftCols(nd_);
      here_block = -here.F.middleRows(2 * t, 2).leftCols(nd_);
      if (mechanics_.segmentContact(t))
        here_block.noalias() +=
            (B.transpose() * (next.axis.col(t) - here.axis.col(t))) * here.t_q.row(t);
      for (int i = 0; i < nd_; ++i) {
        const Eigen::Map<const Eigen::Matrix<double, 3, 2>> dB(here.basis_q[t].col(i).data());
        here_block.col(i) += dB.transpose() * dx;
      }
    }
  // The sliding rows' derivatives: the slip rows' (just written), turned to the facet's frame.
  for (int k = 0; k < N_ && derivatives; ++k)
    for (int t = 0; t < nt_; ++t) {
      const Eigen::Matrix2d R = slideFrame(k, t);
      const SlideBlocks& b = slide_blocks_[k * nt_ + t];
      jacobian_.values(b.next).leftCols(nd_) =
          R * jacobian_.values(slip_next_[k]).middleRows(2 * t, 2).leftCols(nd_);
      if (b.here >= 0)
        jacobian_.values(b.here).leftCols(nd_) =
            R * jacobian_.values(slip_here_[k - 1]).middleRows(2 * t, 2).leftCols(nd_);
    }
  // The rig's speed and acceleration (before the start, rig_before's or at rest), the rest rows.
  for (int k = 0; k < N_; ++k)
    for (int i = 0; i < nk_; ++i) {
      g_[speed_row_ + k * nk_ + i] = rigAt(k + 1, i) - rigAt(k, i);
      g_[accel_row_ + k * nk_ + i] =
          rigAt(k + 1, i) - 2 * rigAt(k, i) + rigAt(k - 1, i) - z[accelAt(k) + i];
    }
  for (int i = 1; i <= setup_.rest_knots; ++i)
    g_.segment(rest_row_ + (i - 1) * nq_, nq_) = q_[N_ - i] - q_[N_ - i + 1];

  // The goal at its knot.
  if (goal_rows_ > 0) {
    Eigen::MatrixXd J = Eigen::MatrixXd::Zero(goal_rows_, nq_);
    const Eigen::VectorXd& q_goal = q_[goal_knot_];
    if (goal_.spec().kind == GoalSpec::Kind::Point) {
      forwardKinematics(m, data_, q_goal);
      goal_point_jacobians_.resize(goal_rows_, Eigen::MatrixXd::Zero(3, nq_));
      for (int r = 0; r < goal_rows_; ++r) {
        const Point& p = m.points[goal_.goalPoints()[r]];
        const Eigen::Vector3d e =
            pointPosition(data_, p.frame, p.position_m) - goal_.pointTargetsWorld()[r];
        g_[goal_row_ + r] = 0.5 * e.squaredNorm();
        if (derivatives) {
          pointJacobian(m, data_, p.frame, p.position_m, goal_point_jacobians_[r]);
          J.row(r) = e.transpose() * goal_point_jacobians_[r];
        }
      }
    } else {
      const Eigen::VectorXd residual = goal_.poseResidual(q_goal.head(nd_), q_goal.tail(nk_));
      const std::vector<int>& vars = goal_.goalVariables();
      for (int r = 0; r < goal_rows_; ++r) {
        g_[goal_row_ + r] = residual[r];
        J(r, r < static_cast<int>(vars.size()) ? vars[r] : nd_ + r - static_cast<int>(vars.size())) =
            1.0;
      }
    }
    if (derivatives) jacobian_.values(goal_blocks_[0]) = J;
  }

  // Clearance at every knot, signed (a knot inside an obstacle has a way out): to the stage,
  // and to anything -- but at a knot where a contact touches (the modes': on a step that ends or
  // starts there), to anything the puppet may not touch.  A puppet kept 5 mm from everything is
  // stage-worthy; one that must touch (a foot on the floor) touches, as the dynamics do.
  for (int k = 1; k <= N_ && checker_; ++k) {
    const bool touching = knotTouches(k);
    forwardKinematics(m, data_, q_[k]);
    computeStrings(m, data_, q_[k], false);
    const ClearanceResult c = checker_->clearance(q_[k], Penetration::Signed);
    const int row = clearance_row_ + (k - 1) * clearance_rows_per_knot_;
    g_[row] = std::min(c.stage_distance_m, kClearanceCap_m);
    const double second = touching ? c.forbidden_distance_m : c.distance_m;
    g_[row + 1] = std::min(second, kClearanceCap_m);
    if (!derivatives) continue;
    auto block = jacobian_.values(clearance_blocks_[k - 1]);
    block.setZero();
    if (c.stage_distance_m < kClearanceCap_m) block.row(0) = clearance_gradient_->stage(data_, c);
    if (second < kClearanceCap_m)
      block.row(1) = touching ? clearance_gradient_->forbidden(data_, c)
                              : clearance_gradient_->nearest(data_, c);
  }

  // The objective.
  cost_ = 0.0;
  gradient_.setZero();
  addInputCosts(z, derivatives);
  addSwingAndTensionCosts(z, derivatives);
  addTrackingCosts(derivatives);
  addStateTrackingCosts(z, derivatives);
  return std::isfinite(cost_) && g_.allFinite();
}

double TranscriptionProblem::swingWeight(int interval) const {
  const int hold = setup_.hold_from_knot;
  return hold >= 0 && interval >= hold ? setup_.weights.settle : setup_.weights.swing;
}

double TranscriptionProblem::rigAt(int k, int i) const {
  if (k >= 0) return q_[k][nd_ + i];
  return setup_.rig_before.size() > 0 ? setup_.rig_before(-k - 1, i) : q_[0][nd_ + i];
}

// Effort and jerk of the rig inputs; before the start, rig_before's (fixed), or the rig at rest
// there.
void TranscriptionProblem::addInputCosts(const Eigen::VectorXd& z, bool derivatives) {
  const double dt = setup_.integrator.dt_s;
  const OptimizationWeights& w = setup_.weights;
  auto add = [&](int knot, int i, double coefficient) {
    if (derivatives && knot >= 1) gradient_[xAt(knot) + nd_ + i] += coefficient;
  };
  for (int i = 0; i < nk_; ++i) {
    const auto rho = [&](int k) { return rigAt(k, i); };
    const double speed_ref = speed_ref_[i], jerk_ref = jerk_ref_[i];
    for (int k = 0; k < N_; ++k) {
      const double speed = (rho(k + 1) - rho(k)) / (dt * speed_ref);
      cost_ += w.effort * dt * speed * speed;
      const double ds = 2 * w.effort * speed / speed_ref;  // d/d rho_{k+1}: dt cancels
      add(k + 1, i, ds);
      add(k, i, -ds);
      // (rho_{k+1} - 3 rho_k + 3 rho_{k-1} - rho_{k-2}) = a_k - a_{k-1}.
      const double before = k >= 1 ? z[accelAt(k - 1) + i] : secondDifferenceBefore(i);
      const double jerk = (z[accelAt(k) + i] - before) / (dt * dt * dt * jerk_ref);
      cost_ += w.jerk * dt * jerk * jerk;
      if (!derivatives) continue;
      const double dj = 2 * w.jerk * jerk / (dt * dt * jerk_ref);
      gradient_[accelAt(k) + i] += dj;
      if (k >= 1) gradient_[accelAt(k - 1) + i] -= dj;
    }
  }
}

// The puppet's kinetic energy (the start's mass matrix), the multipliers' rate, and the
// complementarity penalty lambda_c / lambda_ref_c * (-g_c) / gap unit of every unilateral row.
void TranscriptionProblem::addSwingAndTensionCosts(const Eigen::VectorXd& z, bool derivatives) {
  const double dt = setup_.integrator.dt_s;
  const OptimizationWeights& w = setup_.weights;
  for (int k = 0; k < N_; ++k) {
    const Eigen::VectorXd v = (q_[k + 1].head(nd_) - q_[k].head(nd_)) / dt;
    const Eigen::VectorXd Mv = mass_ref_ * v;
    const double weight = swingWeight(k);
    cost_ += weight * dt * 0.5 * v.dot(Mv) / energy_ref_J_;
    if (!derivatives) continue;
    const Eigen::VectorXd d = (weight / energy_ref_J_) * Mv;
    gradient_.segment(xAt(k + 1), nd_) += d;
    if (k >= 1) gradient_.segment(xAt(k), nd_) -= d;
  }
  for (int k = 0; k + 1 < N_; ++k)
    for (int c = 0; c < ns_; ++c) {
      const double scale = rate_scale_[c];
      const double rate = (z[lambdaAt(k + 1) + c] - z[lambdaAt(k) + c]) * scale;
      cost_ += w.tension_rate * dt * rate * rate;
      const double d = 2 * w.tension_rate * dt * rate * scale;
      gradient_[lambdaAt(k + 1) + c] += d;
      gradient_[lambdaAt(k) + c] -= d;
    }
  for (int k = 0; k < N_; ++k) {
    const KnotConstraints& next = knots_[k + 1];
    for (int c = 0; c < nc_; ++c) {
      const double lambda = z[lambdaAt(k) + c] / lambda_ref_[c];
      // A string's or contact's slackness variable, or a stop's variable's distance to its bound
      // (kept >= 0 by its bound).
      const double gap = (c < nu_ ? z[slackAt(k) + c] : -next.g[c]) / gap_unit_[c];
      cost_ += w.complementarity * lambda * gap;
      if (!derivatives) continue;
      gradient_[lambdaAt(k) + c] += w.complementarity * gap / lambda_ref_[c];
      if (c < nu_)
        gradient_[slackAt(k) + c] += w.complementarity * lambda / gap_unit_[c];
      else
        gradient_.segment(xAt(k + 1), nq_) -= (w.complementarity * lambda / gap_unit_[c]) * next.G.row(c);
    }
  }
}

// The targets at knots 1..N: c weight_i |p_i - target_i|^2 with c = w dt / (1 cm)^2, a
// variable's c weight (s (v - value))^2.
void TranscriptionProblem::addTrackingCosts(bool derivatives) {
  const Model& m = *setup_.model;
  const double c = setup_.weights.tracking * setup_.integrator.dt_s / (kTrack_m * kTrack_m);
  const int P = static_cast<int>(setup_.track_points.size());
  for (int k = 1; k <= N_; ++k) {
    if (P > 0) forwardKinematics(m, data_, q_[k]);
    for (int i = 0; i < P; ++i) {
      Eigen::MatrixXd& J = track_jacobians_[k * P + i];
      const Eigen::Vector3d target = setup_.track_targets_m.block<1, 3>(k, 3 * i).transpose();
      if (!target.allFinite()) {
        J.setZero();
        continue;
      }
      const Point& point = m.points[setup_.track_points[i]];
      const double weight = trackPointWeight(k, i);
      const Eigen::Vector3d e = pointPosition(data_, point.frame, point.position_m) - target;
      cost_ += c * weight * e.squaredNorm();
      if (!derivatives) continue;
      pointJacobian(m, data_, point.frame, point.position_m, J);
      gradient_.segment(xAt(k), nq_).noalias() += (2 * c * weight) * (J.transpose() * e);
    }
    for (std::size_t i = 0; i < setup_.track_variables.size(); ++i) {
      const double value = setup_.track_values(k, static_cast<Eigen::Index>(i));
      if (!std::isfinite(value)) continue;
      const double s = setup_.track_variable_scale_m[i];
      const double weight =
          setup_.track_variable_weight.empty() ? 1.0 : setup_.track_variable_weight[i];
      const int v = setup_.track_variables[i];
      const double e = s * (q_[k][v] - value);
      cost_ += c * weight * e * e;
      if (derivatives) gradient_[xAt(k) + v] += 2 * c * weight * s * e;
    }
  }
}

double TranscriptionProblem::complementarityViolation(const Eigen::VectorXd& z) {
  evaluate(z, false);
  double worst = 0.0;
  for (int k = 0; k < N_; ++k)
    for (int c = 0; c < nc_; ++c) {
      const double lambda = z[lambdaAt(k) + c] / lambda_ref_[c];
      const double gap = (c < nu_ ? z[slackAt(k) + c] : -knots_[k + 1].g[c]) / gap_unit_[c];
      worst = std::max(worst, std::min(lambda, gap));
    }
  return worst;
}

}  // namespace marionette::detail
