#include "marionette/models/rest_pose.hpp"

#include <Eigen/LU>
#include <cmath>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"

namespace marionette {

namespace {
Eigen::VectorXd fullQ(const Model& m, const Eigen::VectorXd& qd, const Eigen::VectorXd& rho) {
  Eigen::VectorXd q(m.nq());
  q << qd, rho;
  return q;
}
}  // namespace

bool projectOntoStrings(const Model& model, Eigen::VectorXd& q, const Eigen::VectorXd& rho,
                        const std::vector<char>& fixed, double tol_m) {
  DynamicsData d(model);
  const int nd = model.nd();
  auto violation = [&](const Eigen::VectorXd& qd) {
    const Eigen::VectorXd qf = fullQ(model, qd, rho);
    forwardKinematics(model, d, qf);
    computeStrings(model, d, qf, false);
    return (d.distance - d.length).cwiseMax(0.0).maxCoeff();
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
    while (violation(trial) >= worst && alpha > 1e-6) {
      alpha *= 0.5;
      trial = q + alpha * step;
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
  forwardKinematics(model, d, fullQ(model, q, rho));
  computeLagrangian(model, d, fullQ(model, q, rho), Eigen::VectorXd::Zero(nd),
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

  // Phase 2: Newton on the KKT system, pivoting strings (least index first) until complementary.
  std::vector<char> active(ns, 0);
  Eigen::VectorXd mu = Eigen::VectorXd::Zero(ns);
  {
    const Eigen::VectorXd qf = fullQ(model, q, rho);
    forwardKinematics(model, d, qf);
    computeStrings(model, d, qf, false);
    for (int j = 0; j < ns; ++j) {
      active[j] = have_report ? rep.taut[j] : (d.distance[j] >= d.length[j] - 1e-9);
      if (active[j] && have_report) mu[j] = rep.tension_N[j] / std::max(1e-9, d.distance[j]);
    }
  }
  double gscale = 0.0;
  for (int pass = 0; pass < 4 * ns + 4; ++pass) {
    std::vector<int> A;
    for (int j = 0; j < ns; ++j)
      if (active[j]) A.push_back(j);
    const int m = static_cast<int>(A.size());
    bool converged = false;
    for (int it = 0; it < 60; ++it) {
      const Eigen::VectorXd qf = fullQ(model, q, rho);
      forwardKinematics(model, d, qf);
      computeStrings(model, d, qf, true);
      computeLagrangian(model, d, qf, Eigen::VectorXd::Zero(nd), LagrangianOrder::Second);
      const Eigen::VectorXd grad = -d.Lq;  // dV/dq at rest
      if (gscale == 0.0) gscale = std::max(grad.cwiseAbs().maxCoeff(), 1e-12);
      Eigen::VectorXd r1 = grad;
      Eigen::MatrixXd K = Eigen::MatrixXd::Zero(nd + m, nd + m);
      K.topLeftCorner(nd, nd) = -d.Lqq;
      Eigen::VectorXd r(nd + m);
      double cerr = 0.0;
      for (int i = 0; i < m; ++i) {
        const int j = A[i];
        r1 += mu[j] * d.Dh.row(j).head(nd).transpose();
        K.topLeftCorner(nd, nd) += mu[j] * d.D2h[j].topLeftCorner(nd, nd);
        K.block(0, nd + i, nd, 1) = d.Dh.row(j).head(nd).transpose();
        K.block(nd + i, 0, 1, nd) = d.Dh.row(j).head(nd);
        r[nd + i] = d.h[j];
        cerr = std::max(cerr, std::abs(d.distance[j] - d.length[j]));
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
    for (int j = 0; j < ns && flip < 0; ++j) {
      if (active[j] && mu[j] < -1e-9 * gscale) flip = j;
      if (!active[j] && d.distance[j] - d.length[j] > 1e-12) flip = j;
    }
    if (flip < 0) {
      out.ok = true;
      break;
    }
    active[flip] ^= 1;
    mu[flip] = 0.0;
  }
  if (!out.ok && out.message.empty()) out.message = "rest pose: string set did not settle";

  out.q = q;
  const Eigen::VectorXd qf = fullQ(model, q, rho);
  forwardKinematics(model, d, qf);
  computeStrings(model, d, qf, false);
  out.potential_J = potentialEnergy(model, d, qf);
  out.max_violation_m = ns ? (d.distance - d.length).cwiseMax(0.0).maxCoeff() : 0.0;
  for (int j = 0; j < ns; ++j) {
    out.taut[j] = active[j];
    out.tension_N[j] = active[j] ? std::max(0.0, mu[j]) * d.distance[j] : 0.0;
  }
  return out;
}

}  // namespace marionette
