// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/baseline.hpp"

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <cmath>

namespace marionette {

namespace {
constexpr double kTautTol_m = 1e-9;
}

ExplicitIntegrator::ExplicitIntegrator(ModelPtr model, ExplicitMethod method, double dt_s,
                                       double damping_scale)
    : model_(std::move(model)),
      method_(method),
      dt_(dt_s),
      nd_(model_->nd()),
      nk_(model_->nk()),
      ns_(model_->nstrings()),
      damping_(model_->dampingVector() * damping_scale),
      nc_(ns_ + static_cast<int>(model_->stops.size())),
      dyn_(*model_),
      active_(nc_, 0),
      tension_(Eigen::VectorXd::Zero(ns_)),
      G_(Eigen::MatrixXd::Zero(nc_, nd_ + nk_)),
      gap_(Eigen::VectorXd::Zero(nc_)) {
  for (int i = 0; i < nc_ - ns_; ++i)
    G_(ns_ + i, model_->stops[i].variable) = model_->stops[i].sign;
}

ContinuousState ExplicitIntegrator::makeState() const {
  return {Eigen::VectorXd::Zero(nd_), Eigen::VectorXd::Zero(nd_), model_->defaultInputs(),
          Eigen::VectorXd::Zero(nk_)};
}

// Constraint rows at the kinematics in dyn_ (strings computed at qf): strings first, then the
// model's joint stops, each g_c <= 0 with gradient G_.row(c) over q (n_q) and gap_[c] (m or rad).
void ExplicitIntegrator::gatherConstraints(const Eigen::VectorXd& qf) {
  G_.topRows(ns_) = dyn_.Dh;
  gap_.head(ns_) = dyn_.distance - dyn_.length;
  for (int i = 0; i < nc_ - ns_; ++i) {
    const Model::StopRow& r = model_->stops[i];
    gap_[ns_ + i] = r.sign * (qf[r.variable] - r.bound);
  }
}

bool ExplicitIntegrator::acceleration(const Eigen::VectorXd& q, const Eigen::VectorXd& qdot,
                                      const Eigen::VectorXd& rho, const Eigen::VectorXd& rhodot,
                                      Eigen::VectorXd& qdd, bool choose_active_set) {
  Eigen::VectorXd qf(nd_ + nk_), vf(nd_ + nk_);
  qf << q, rho;
  vf << qdot, rhodot;
  forwardKinematics(*model_, dyn_, qf);
  computeLagrangian(*model_, dyn_, qf, qdot, LagrangianOrder::Second);
  computeStrings(*model_, dyn_, qf, true);
  gatherConstraints(qf);
  // Generalised forces: dL/dq - (d2L/dv dq) qdot + damping + joint-limit dampers.
  Eigen::VectorXd force = dyn_.Lq - dyn_.Lqv.transpose() * qdot;
  for (int k = 0; k < nd_; ++k) {
    const double c = damping_[k] + jointLimitTerms(model_->dynamic[k].limit, q[k]).c;
    force[k] -= c * qdot[k];
  }
  if (choose_active_set)
    for (int c = 0; c < nc_; ++c) active_[c] = gap_[c] >= -kTautTol_m;
  tension_.setZero();
  for (int pass = 0; pass <= nc_; ++pass) {
    std::vector<int> A;
    for (int c = 0; c < nc_; ++c)
      if (active_[c]) A.push_back(c);
    const int m = static_cast<int>(A.size());
    Eigen::MatrixXd K = Eigen::MatrixXd::Zero(nd_ + m, nd_ + m);
    Eigen::VectorXd r(nd_ + m);
    K.topLeftCorner(nd_, nd_) = dyn_.M;
    r.head(nd_) = force;
    for (int i = 0; i < m; ++i) {
      const int c = A[i];
      K.block(0, nd_ + i, nd_, 1) = G_.row(c).head(nd_).transpose();
      K.block(nd_ + i, 0, 1, nd_) = G_.row(c).head(nd_);
      // g_dd = G qdd_full + v^T D2g v = 0; rho moves linearly within a step (rhodd = 0), and a
      // stop is linear in q.
      r[nd_ + i] = c < ns_ ? -vf.dot(dyn_.D2h[c] * vf) : 0.0;
    }
    const Eigen::VectorXd sol = Eigen::PartialPivLU<Eigen::MatrixXd>(K).solve(r);
    if (!sol.allFinite()) return false;
    qdd = sol.head(nd_);
    int drop = -1;
    for (int i = 0; i < m; ++i) {
      if (A[i] < ns_) tension_[A[i]] = sol[nd_ + i] * dyn_.distance[A[i]];
      if (sol[nd_ + i] < 0.0 && drop < 0) drop = A[i];
    }
    if (drop < 0 || !choose_active_set) return true;
    active_[drop] = 0;  // it would push: release it
    tension_.setZero();
  }
  return true;
}

void ExplicitIntegrator::applyCatchImpulse(const Eigen::VectorXd& q, Eigen::VectorXd& qdot,
                                           const Eigen::VectorXd& rho,
                                           const Eigen::VectorXd& rhodot) {
  Eigen::VectorXd qf(nd_ + nk_);
  qf << q, rho;
  forwardKinematics(*model_, dyn_, qf);
  computeStrings(*model_, dyn_, qf, false);
  computeLagrangian(*model_, dyn_, qf, qdot, LagrangianOrder::MassMatrix);
  gatherConstraints(qf);
  auto rate = [&](int c) {
    return G_.row(c).head(nd_).dot(qdot) + G_.row(c).tail(nk_).dot(rhodot);
  };
  std::vector<char> inext(nc_, 0);
  for (int c = 0; c < nc_; ++c) inext[c] = active_[c] || (gap_[c] > 0.0 && rate(c) > 0.0);
  const Eigen::LLT<Eigen::MatrixXd> Mllt(dyn_.M);
  for (int pass = 0; pass <= nc_; ++pass) {
    std::vector<int> S;
    for (int c = 0; c < nc_; ++c)
      if (inext[c]) S.push_back(c);
    if (S.empty()) return;
    Eigen::MatrixXd Ad(S.size(), nd_);
    Eigen::VectorXd gdot(S.size());
    for (size_t i = 0; i < S.size(); ++i) {
      Ad.row(i) = G_.row(S[i]).head(nd_);
      gdot[i] = rate(S[i]);
    }
    // kappa = (A M^-1 A^T)^-1 (A qdot + A_k rhodot); qdot -= M^-1 A^T kappa (Johnson & Murphey,
    // ICRA 2007 eq. 15).
    const Eigen::MatrixXd MinvAt = Mllt.solve(Ad.transpose());
    const Eigen::VectorXd kappa = (Ad * MinvAt).ldlt().solve(gdot);
    int drop = -1;
    for (size_t i = 0; i < S.size() && drop < 0; ++i)
      if (kappa[i] < 0.0) drop = S[i];  // that constraint would push: leave it free
    if (drop >= 0) {
      inext[drop] = 0;
      continue;
    }
    qdot -= MinvAt * kappa;
    for (int c : S) active_[c] = 1;
    return;
  }
}

StepStatus ExplicitIntegrator::step(const ContinuousState& x, const Eigen::VectorXd& rho_next,
                                    ContinuousState& next, StepReport* report) {
  if (x.q.size() != nd_ || x.qdot.size() != nd_ || x.rho.size() != nk_ || rho_next.size() != nk_ ||
      !rho_next.allFinite())
    return StepStatus::BadInput;
  const Eigen::VectorXd rhodot = (rho_next - x.rho) / dt_;
  Eigen::VectorXd q = x.q, qdot = x.qdot;
  // Strings taut now; a change of rig velocity jerks them (impulse) to stay inextensible.
  {
    Eigen::VectorXd qf(nd_ + nk_);
    qf << q, x.rho;
    forwardKinematics(*model_, dyn_, qf);
    computeStrings(*model_, dyn_, qf, false);
    gatherConstraints(qf);
    for (int c = 0; c < nc_; ++c) active_[c] = gap_[c] >= -kTautTol_m;
    if ((rhodot - x.rhodot).cwiseAbs().maxCoeff() > 0.0) applyCatchImpulse(q, qdot, x.rho, rhodot);
  }
  Eigen::VectorXd a1(nd_);
  if (!acceleration(q, qdot, x.rho, rhodot, a1, true)) return StepStatus::NonFinite;
  const Eigen::VectorXd tension = tension_;
  const std::vector<char> taut = active_;
  if (method_ == ExplicitMethod::Euler) {
    q += dt_ * qdot;  // forward (explicit) Euler: both updates use the start of the step
    qdot += dt_ * a1;
  } else {
    // Classical RK4 on (q, qdot) with the active set of the step's start.
    const double h = dt_;
    Eigen::VectorXd a2(nd_), a3(nd_), a4(nd_);
    const Eigen::VectorXd v1 = qdot;
    const Eigen::VectorXd v2 = qdot + 0.5 * h * a1;
    if (!acceleration(q + 0.5 * h * v1, v2, x.rho + 0.5 * h * rhodot, rhodot, a2, false))
      return StepStatus::NonFinite;
    const Eigen::VectorXd v3 = qdot + 0.5 * h * a2;
    if (!acceleration(q + 0.5 * h * v2, v3, x.rho + 0.5 * h * rhodot, rhodot, a3, false))
      return StepStatus::NonFinite;
    const Eigen::VectorXd v4 = qdot + h * a3;
    if (!acceleration(q + h * v3, v4, rho_next, rhodot, a4, false)) return StepStatus::NonFinite;
    q += h / 6.0 * (v1 + 2 * v2 + 2 * v3 + v4);
    qdot += h / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4);
  }
  // A slack string that is now over-stretched and separating catches (inelastic impulse).
  active_ = taut;
  applyCatchImpulse(q, qdot, rho_next, rhodot);
  if (!q.allFinite() || !qdot.allFinite()) return StepStatus::NonFinite;

  if (report) {
    Eigen::VectorXd qf(nd_ + nk_);
    qf << q, rho_next;
    forwardKinematics(*model_, dyn_, qf);
    computeStrings(*model_, dyn_, qf, false);
    report->newton_iterations = 0;
    report->active_set_changes = 0;
    report->max_violation_m = 0.0;
    report->constraint_residual_m = 0.0;
    report->stops_active = 0;
    for (int c = ns_; c < nc_; ++c) report->stops_active += taut[c];
    for (int j = 0; j < ns_; ++j) {
      const double over = dyn_.distance[j] - dyn_.length[j];
      report->max_violation_m = std::max(report->max_violation_m, over);
      report->taut[j] = taut[j];
      report->tension_N[j] = taut[j] ? std::max(0.0, tension[j]) : 0.0;
      if (taut[j])
        report->constraint_residual_m = std::max(report->constraint_residual_m, std::abs(over));
    }
  }
  next.q = q;
  next.qdot = qdot;
  next.rho = rho_next;
  next.rhodot = rhodot;
  return StepStatus::Ok;
}

double ExplicitIntegrator::energy(const ContinuousState& x) {
  Eigen::VectorXd qf(nd_ + nk_);
  qf << x.q, x.rho;
  return mechanicalEnergy(*model_, dyn_, qf, x.qdot);
}

}  // namespace marionette
