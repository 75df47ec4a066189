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
      dyn_(*model_),
      active_(ns_, 0),
      tension_(Eigen::VectorXd::Zero(ns_)) {}

ContinuousState ExplicitIntegrator::makeState() const {
  return {Eigen::VectorXd::Zero(nd_), Eigen::VectorXd::Zero(nd_), model_->defaultInputs(),
          Eigen::VectorXd::Zero(nk_)};
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
  // Generalised forces: dL/dq - (d2L/dv dq) qdot + damping + joint-limit dampers.
  Eigen::VectorXd force = dyn_.Lq - dyn_.Lqv.transpose() * qdot;
  for (int k = 0; k < nd_; ++k) {
    const double c = damping_[k] + jointLimitTerms(model_->dynamic[k].limit, q[k]).c;
    force[k] -= c * qdot[k];
  }
  if (choose_active_set)
    for (int j = 0; j < ns_; ++j) active_[j] = dyn_.distance[j] >= dyn_.length[j] - kTautTol_m;
  tension_.setZero();
  for (int pass = 0; pass <= ns_; ++pass) {
    std::vector<int> A;
    for (int j = 0; j < ns_; ++j)
      if (active_[j]) A.push_back(j);
    const int m = static_cast<int>(A.size());
    Eigen::MatrixXd K = Eigen::MatrixXd::Zero(nd_ + m, nd_ + m);
    Eigen::VectorXd r(nd_ + m);
    K.topLeftCorner(nd_, nd_) = dyn_.M;
    r.head(nd_) = force;
    for (int i = 0; i < m; ++i) {
      const int j = A[i];
      K.block(0, nd_ + i, nd_, 1) = dyn_.Dh.row(j).head(nd_).transpose();
      K.block(nd_ + i, 0, 1, nd_) = dyn_.Dh.row(j).head(nd_);
      // rho moves linearly within a step, so rhodd = 0.
      r[nd_ + i] = -vf.dot(dyn_.D2h[j] * vf);
    }
    const Eigen::VectorXd sol = Eigen::PartialPivLU<Eigen::MatrixXd>(K).solve(r);
    if (!sol.allFinite()) return false;
    qdd = sol.head(nd_);
    int drop = -1;
    for (int i = 0; i < m; ++i) {
      tension_[A[i]] = sol[nd_ + i] * dyn_.distance[A[i]];
      if (sol[nd_ + i] < 0.0 && drop < 0) drop = A[i];
    }
    if (drop < 0 || !choose_active_set) return true;
    active_[drop] = 0;  // it would push: slack
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
  std::vector<char> inext(ns_, 0);
  for (int j = 0; j < ns_; ++j) {
    const double hdot = dyn_.Dh.row(j).head(nd_).dot(qdot) + dyn_.Dh.row(j).tail(nk_).dot(rhodot);
    inext[j] = active_[j] || (dyn_.distance[j] > dyn_.length[j] && hdot > 0.0);
  }
  const Eigen::LLT<Eigen::MatrixXd> Mllt(dyn_.M);
  for (int pass = 0; pass <= ns_; ++pass) {
    std::vector<int> S;
    for (int j = 0; j < ns_; ++j)
      if (inext[j]) S.push_back(j);
    if (S.empty()) return;
    Eigen::MatrixXd Ad(S.size(), nd_);
    Eigen::VectorXd hdot(S.size());
    for (size_t i = 0; i < S.size(); ++i) {
      Ad.row(i) = dyn_.Dh.row(S[i]).head(nd_);
      hdot[i] = Ad.row(i).dot(qdot) + dyn_.Dh.row(S[i]).tail(nk_).dot(rhodot);
    }
    // kappa = (A M^-1 A^T)^-1 (A qdot + A_k rhodot); qdot -= M^-1 A^T kappa (seed 000 eq. 15).
    const Eigen::MatrixXd MinvAt = Mllt.solve(Ad.transpose());
    const Eigen::VectorXd kappa = (Ad * MinvAt).ldlt().solve(hdot);
    int drop = -1;
    for (size_t i = 0; i < S.size() && drop < 0; ++i)
      if (kappa[i] < 0.0) drop = S[i];  // that string would push: leave it slack
    if (drop >= 0) {
      inext[drop] = 0;
      continue;
    }
    qdot -= MinvAt * kappa;
    for (int j : S) active_[j] = 1;
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
    for (int j = 0; j < ns_; ++j) active_[j] = dyn_.distance[j] >= dyn_.length[j] - kTautTol_m;
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
