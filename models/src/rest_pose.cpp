// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/rest_pose.hpp"

#include <Eigen/LU>
#include <algorithm>
#include <cmath>

#include "marionette/models/cancel.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"

namespace marionette {

bool projectOntoStrings(const Model& model, Eigen::VectorXd& q, const Eigen::VectorXd& rho,
                        const std::vector<char>& fixed, double tol_m) {
  DynamicsData d(model);
  const int nd = model.nd();
  auto violation = [&](const Eigen::VectorXd& qd) {
    const Eigen::VectorXd qf = model.configuration(qd, rho);
    forwardKinematics(model, d, qf);
    computeStrings(model, d, qf, false);
    return (d.distance - d.length).cwiseMax(0.0).maxCoeff();
  };
  // Joint stops first: a joint outside its limits is moved onto them (a fixed one cannot be).
  for (int k = 0; k < nd; ++k) {
    const JointLimit& L = model.dynamic[k].limit;
    if (!L.isStop()) continue;
    const double clamped = std::min(L.upper, std::max(L.lower, q[k]));
    if (clamped != q[k] && !fixed.empty() && fixed[k]) return false;
    q[k] = clamped;
  }
  auto clampFree = [&](Eigen::VectorXd& x) {
    for (int k = 0; k < nd; ++k) {
      const JointLimit& L = model.dynamic[k].limit;
      if (L.isStop()) x[k] = std::min(L.upper, std::max(L.lower, x[k]));
    }
  };
  for (int it = 0; it < 100; ++it) {
    const double worst = model.nstrings() ? violation(q) : 0.0;
    if (worst <= tol_m) return true;
    std::vector<int> over;
    for (int j = 0; j < model.nstrings(); ++j)
      if (d.distance[j] - d.length[j] > tol_m) over.push_back(j);
    // Least-norm Gauss-Newton step on h_over(q) = 0 over the free variables.
    Eigen::MatrixXd J(over.size(), nd);
    Eigen::VectorXd h(over.size());
    for (size_t i = 0; i < over.size(); ++i) {
      J.row(i) = d.Dh.row(over[i]).head(nd);
      h[i] = d.h[over[i]];
    }
    for (int k = 0; k < nd; ++k)
      if (!fixed.empty() && fixed[k]) J.col(k).setZero();
    const Eigen::MatrixXd JJt = J * J.transpose();
    const double reg = 1e-12 * (1.0 + JJt.diagonal().maxCoeff());
    const Eigen::VectorXd step =
        -J.transpose() *
        (JJt + reg * Eigen::MatrixXd::Identity(JJt.rows(), JJt.cols())).ldlt().solve(h);
    if (!step.allFinite() || step.cwiseAbs().maxCoeff() == 0.0) return false;
    // Backtrack until the worst over-stretch decreases.
    double alpha = 1.0;
    Eigen::VectorXd trial = q + step;
    clampFree(trial);
    while (violation(trial) >= worst && alpha > 1e-6) {
      alpha *= 0.5;
      trial = q + alpha * step;
      clampFree(trial);
    }
    if (alpha <= 1e-6) return false;
    q = trial;
  }
  return model.nstrings() == 0 || violation(q) <= tol_m;
}

RestPose computeRestPose(const ModelPtr& model_ptr, const Eigen::VectorXd& rho,
                         const Eigen::VectorXd* guess, RestPoseOptions options) {
  const Model& model = *model_ptr;
  const int nd = model.nd(), ns = model.nstrings();
  RestPose out;
  out.tension_N.setZero(ns);
  out.taut.assign(ns, 0);
  if (rho.size() != model.nk() || !rho.allFinite()) {
    out.message = "inputs must be " + std::to_string(model.nk()) + " finite numbers";
    return out;
  }
  Eigen::VectorXd q = guess ? *guess : model.initialDynamic();
  projectOntoStrings(model, q, rho, {});

  // Phase 1: settle.  Damping proportional to each joint's own inertia (rate 8/s) overdamps the
  // slow swings and lets the fast ones ring down; the VI is implicit, so big steps are stable.
  DynamicsData d(model);
  forwardKinematics(model, d, model.configuration(q, rho));
  computeLagrangian(model, d, model.configuration(q, rho), Eigen::VectorXd::Zero(nd),
                    LagrangianOrder::MassMatrix);
  // A step that fails (a violent first catch, say) is retried at half the time step.
  IntegratorOptions io;
  io.dt_s = options.settle_dt_s;
  io.damping_override = 8.0 * d.M.diagonal();
  State x{q, Eigen::VectorXd::Zero(nd), rho};
  StepReport rep;
  bool have_report = false;
  while (io.dt_s >= options.settle_dt_s / 64) {
    VariationalIntegrator vi(model_ptr, io);
    State next = vi.makeState();
    rep = vi.makeReport();
    bool failed = false;
    for (; out.settle_steps < options.max_settle_steps; ++out.settle_steps) {
      throwIfCancelled("rest pose");
      if (vi.step(x, rho, next, &rep) != StepStatus::Ok) {
        failed = true;
        break;
      }
      have_report = true;
      const double speed = (next.q - x.q).cwiseAbs().maxCoeff() / io.dt_s;
      x = next;
      if (speed < options.settle_velocity_tol) break;
    }
    if (!failed) break;
    io.dt_s *= 0.5;
  }
  q = x.q;

  // Phase 2: Newton on the KKT system over the strings and joint stops (constraint c < n_s is
  // string c, the rest are the model's stops), pivoting one constraint at a time (least index
  // first) until complementary.
  const int nc = ns + static_cast<int>(model.stops.size());
  std::vector<char> active(nc, 0);
  Eigen::VectorXd mu = Eigen::VectorXd::Zero(nc);
  Eigen::VectorXd gap(nc), hval(nc);
  Eigen::MatrixXd G(nc, nd);
  // Constraint values and gradients at the current q (strings from d, stops from q).
  auto constraints = [&](bool second) {
    const Eigen::VectorXd qf = model.configuration(q, rho);
    forwardKinematics(model, d, qf);
    computeStrings(model, d, qf, second);
    G.setZero();
    for (int j = 0; j < ns; ++j) {
      gap[j] = d.distance[j] - d.length[j];
      hval[j] = d.h[j];
      G.row(j) = d.Dh.row(j).head(nd);
    }
    for (int i = 0; i < nc - ns; ++i) {
      const Model::StopRow& r = model.stops[i];
      gap[ns + i] = hval[ns + i] = r.sign * (q[r.variable] - r.bound);
      G(ns + i, r.variable) = r.sign;
    }
    return qf;
  };
  constraints(false);
  for (int c = 0; c < nc; ++c) {
    const RestPose* prev = options.continue_from;
    if (c < ns && have_report)
      active[c] = rep.taut[c];
    else if (prev && c < ns && static_cast<int>(prev->taut.size()) == ns)
      active[c] = prev->taut[c];
    else if (prev && c >= ns && prev->at_stop.size() == model.stops.size())
      active[c] = prev->at_stop[c - ns];
    else
      active[c] = gap[c] >= -options.taut_guess_gap;
    if (c < ns && active[c] && have_report)
      mu[c] = rep.tension_N[c] / std::max(1e-9, d.distance[c]);
    else if (c < ns && active[c] && prev && static_cast<int>(prev->tension_N.size()) == ns)
      mu[c] = prev->tension_N[c] / std::max(1e-9, d.distance[c]);
  }
  double gscale = 0.0;
  for (int pass = 0; pass < 4 * nc + 4; ++pass) {
    std::vector<int> A;
    for (int c = 0; c < nc; ++c)
      if (active[c]) A.push_back(c);
    const int m = static_cast<int>(A.size());
    bool converged = false;
    for (int it = 0; it < 60; ++it) {
      throwIfCancelled("rest pose");
      const Eigen::VectorXd qf = constraints(true);
      computeLagrangian(model, d, qf, Eigen::VectorXd::Zero(nd), LagrangianOrder::Second);
      const Eigen::VectorXd grad = -d.Lq;  // dV/dq at rest
      if (gscale == 0.0) gscale = std::max(grad.cwiseAbs().maxCoeff(), 1e-12);
      Eigen::VectorXd r1 = grad;
      Eigen::MatrixXd K = Eigen::MatrixXd::Zero(nd + m, nd + m);
      K.topLeftCorner(nd, nd) = -d.Lqq;
      Eigen::VectorXd r(nd + m);
      double cerr = 0.0;
      for (int i = 0; i < m; ++i) {
        const int c = A[i];
        r1 += mu[c] * G.row(c).transpose();
        if (c < ns) K.topLeftCorner(nd, nd) += mu[c] * d.D2h[c].topLeftCorner(nd, nd);
        K.block(0, nd + i, nd, 1) = G.row(c).transpose();
        K.block(nd + i, 0, 1, nd) = G.row(c);
        r[nd + i] = hval[c];
        cerr = std::max(cerr, std::abs(gap[c]));
      }
      r.head(nd) = r1;
      out.stationarity = r1.cwiseAbs().maxCoeff();
      if (!r.allFinite()) break;
      if (out.stationarity <= options.stationarity_tol * gscale && cerr <= 1e-12) {
        converged = true;
        break;
      }
      // A tiny Levenberg-Marquardt shift keeps neutral directions (zero stiffness) solvable.
      K.topLeftCorner(nd, nd).diagonal().array() +=
          1e-12 * (1.0 + K.topLeftCorner(nd, nd).cwiseAbs().maxCoeff());
      Eigen::VectorXd delta = -Eigen::PartialPivLU<Eigen::MatrixXd>(K).solve(r);
      if (!delta.allFinite()) break;
      const double big = delta.head(nd).cwiseAbs().maxCoeff();
      if (big > 0.2) delta *= 0.2 / big;  // trust region against a poor settle
      q += delta.head(nd);
      for (int i = 0; i < m; ++i) mu[A[i]] += delta[nd + i];
    }
    if (!converged) {
      out.message = "rest pose: the equilibrium equations did not converge";
      break;
    }
    int flip = -1;
    for (int c = 0; c < nc && flip < 0; ++c) {
      if (active[c] && mu[c] < -1e-9 * gscale) flip = c;
      if (!active[c] && gap[c] > 1e-12) flip = c;
    }
    if (flip < 0) {
      out.ok = true;
      break;
    }
    active[flip] ^= 1;
    mu[flip] = 0.0;
  }
  if (!out.ok && out.message.empty()) out.message = "rest pose: the string set did not settle";

  out.q = q;
  const Eigen::VectorXd qf = model.configuration(q, rho);
  forwardKinematics(model, d, qf);
  computeStrings(model, d, qf, false);
  out.potential_J = potentialEnergy(model, d, qf);
  out.max_violation_m = ns ? (d.distance - d.length).cwiseMax(0.0).maxCoeff() : 0.0;
  out.at_stop.assign(active.begin() + ns, active.end());
  for (int j = 0; j < ns; ++j) {
    out.taut[j] = active[j];
    out.tension_N[j] = active[j] ? std::max(0.0, mu[j]) * d.distance[j] : 0.0;
  }
  return out;
}

}  // namespace marionette
