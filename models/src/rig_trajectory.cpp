// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/rig_trajectory.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "marionette/common/text.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/models/field_error.hpp"

namespace marionette {

RigTrajectory::RigTrajectory(double dt, const Eigen::VectorXd& rho) : dt_s(dt) {
  position = rho.transpose();
  velocity = Eigen::MatrixXd::Zero(1, rho.size());
}

void RigTrajectory::append(const Eigen::VectorXd& rho, const Eigen::VectorXd& rho_dot) {
  const int k = knots();
  position.conservativeResize(k + 1, Eigen::NoChange);
  velocity.conservativeResize(k + 1, Eigen::NoChange);
  position.row(k) = rho.transpose();
  velocity.row(k) = rho_dot.transpose();
}

int RigTrajectory::extend(int n) {
  const int k = knots();
  position.conservativeResize(k + n, Eigen::NoChange);
  velocity.conservativeResize(k + n, Eigen::NoChange);
  return k;
}

Eigen::VectorXd RigTrajectory::at(double t_s) const {
  const int last = knots() - 1;
  if (t_s <= 0.0) return position.row(0).transpose();
  const double u = t_s / dt_s;
  int i = static_cast<int>(std::floor(u));
  if (i >= last) return position.row(last).transpose();
  const double tau = (u - i) * dt_s;
  // Constant acceleration (v_{i+1} - v_i) / dt on the interval.
  const Eigen::VectorXd v0 = velocity.row(i).transpose(), v1 = velocity.row(i + 1).transpose();
  return position.row(i).transpose() + v0 * tau + 0.5 * (v1 - v0) / dt_s * tau * tau;
}

Eigen::MatrixXd RigTrajectory::resample(double rate_hz) const {
  if (!(rate_hz > 0.0) || !std::isfinite(rate_hz))
    throw std::invalid_argument("rate must be > 0 Hz");
  const double h = 1.0 / rate_hz;
  const int n = static_cast<int>(std::ceil(duration_s() / h - 1e-9)) + 1;
  Eigen::MatrixXd out(n, position.cols());
  for (int i = 0; i < n; ++i) {
    // Where the sample falls on a knot, take the knot itself (no rounding from the quadratic).
    const double t = i * h, u = t / dt_s;
    const long k = std::lround(u);
    if (std::abs(u - k) < 1e-9 && k < knots())
      out.row(i) = position.row(k);
    else
      out.row(i) = at(t).transpose();
  }
  return out;
}

void rigStep(const Model& model, const double* rho, const double* rho_dot, const double* cmd,
             double dt_s, double* rho_next, double* rho_dot_next) {
  for (int i = 0; i < model.nk(); ++i) {
    const KinematicVariable& kv = model.kinematic[i];
    const double target = std::clamp(cmd[i], -kv.max_speed, kv.max_speed);
    const double dv_max = kv.max_accel * dt_s;
    const double v0 = rho_dot[i];
    const double v1 = v0 + std::clamp(target - v0, -dv_max, dv_max);
    rho_next[i] = rho[i] + 0.5 * (v0 + v1) * dt_s;
    rho_dot_next[i] = v1;
  }
}

void appendBrake(const Model& model, RigTrajectory& trajectory) {
  Eigen::VectorXd rho = trajectory.lastPosition(), v = trajectory.lastVelocity();
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model.nk());
  while (v.cwiseAbs().maxCoeff() > 0.0) {
    rigStep(model, rho.data(), v.data(), zero.data(), trajectory.dt_s, rho.data(), v.data());
    trajectory.append(rho, v);
  }
}

namespace {

// The whole steps of dt the quintic move by delta takes at the limits / slowdown; 0 when nothing
// moves.
int moveSteps(const Model& model, const Eigen::VectorXd& delta, double dt, double slowdown) {
  const double T = quinticMoveDuration_s(model, delta);
  if (T == 0.0) return 0;
  const double steps = std::ceil(T * std::max(1.0, slowdown) / dt);
  if (!(steps <= kMaxMoveKnots))
    throw FieldError("target", "a move of " + formatNumber(T * std::max(1.0, slowdown), 4) +
                                   " s at steps of " + formatNumber(dt) + " s is " +
                                   formatNumber(steps, 4) + " steps; at most " +
                                   formatNumber(kMaxMoveKnots));
  return std::max(2, static_cast<int>(steps));
}

}  // namespace

double quinticMoveDuration_s(const Model& model, const Eigen::VectorXd& delta, double fraction,
                             double ignore_below) {
  double T = 0.0;
  for (int i = 0; i < model.nk(); ++i) {
    const KinematicVariable& kv = model.kinematic[i];
    const double d = std::abs(delta[i]);
    if (d == 0.0 || d <= ignore_below) continue;
    T = std::max(T, 15.0 / 8.0 * d / (fraction * kv.max_speed));
    T = std::max(T, std::sqrt(10.0 / std::sqrt(3.0) * d / (fraction * kv.max_accel)));
  }
  return T;
}

double moveDuration(const Model& model, const Eigen::VectorXd& a, const Eigen::VectorXd& b,
                    double dt_s, double slowdown) {
  return moveSteps(model, b - a, dt_s, slowdown) * dt_s;
}

void appendMove(const Model& model, RigTrajectory& trajectory, const Eigen::VectorXd& target,
                double slowdown) {
  const double dt = trajectory.dt_s;
  const Eigen::VectorXd start = trajectory.lastPosition();
  if (trajectory.lastVelocity().cwiseAbs().maxCoeff() > 0.0)
    throw std::logic_error("appendMove: the rig must be stopped");
  const Eigen::VectorXd delta = target - start;
  const int n = moveSteps(model, delta, dt, slowdown);
  if (n == 0) return;
  const double Ts = n * dt;
  // Knot rates are the quintic's; between knots the acceleration is constant (the mean of the
  // quintic's over the interval, so within its bound).  The trapezoid sum of s' then misses 1
  // by O(dt^4); scaling the rates by 1/sum ends the move exactly at the target.
  std::vector<double> sdot(n + 1), s(n + 1, 0.0);
  for (int k = 0; k <= n; ++k) {
    const double tau = static_cast<double>(k) / n;
    sdot[k] = 30.0 * tau * tau * (1.0 - tau) * (1.0 - tau) / Ts;
  }
  for (int k = 1; k <= n; ++k) s[k] = s[k - 1] + 0.5 * (sdot[k - 1] + sdot[k]) * dt;
  const double scale = 1.0 / s[n];
  const int first = trajectory.extend(n);
  for (int k = 1; k <= n; ++k) {
    if ((k & 4095) == 0) throwIfCancelled("rig trajectory");
    const Eigen::VectorXd rho = k == n ? target : Eigen::VectorXd(start + delta * (s[k] * scale));
    trajectory.position.row(first + k - 1) = rho.transpose();
    trajectory.velocity.row(first + k - 1) = (delta * (sdot[k] * scale)).transpose();
  }
}

void appendHold(RigTrajectory& trajectory, double seconds) {
  const Eigen::VectorXd rho = trajectory.lastPosition();
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(rho.size());
  const double steps = std::ceil(seconds / trajectory.dt_s - 1e-9);
  if (!(steps <= kMaxMoveKnots))
    throw FieldError("hold", "a hold of " + formatNumber(seconds) + " s at steps of " +
                                 formatNumber(trajectory.dt_s) + " s is too long");
  const int n = static_cast<int>(std::max(0.0, steps));
  const int first = trajectory.extend(n);
  for (int k = 0; k < n; ++k) {
    trajectory.position.row(first + k) = rho.transpose();
    trajectory.velocity.row(first + k) = zero.transpose();
  }
}

}  // namespace marionette
