#include "marionette/models/integrator.hpp"

#include <cmath>
#include <limits>

namespace marionette {

const char* toString(StepStatus s) {
  switch (s) {
    case StepStatus::Ok: return "ok";
    case StepStatus::NotConverged: return "Newton iteration did not converge";
    case StepStatus::ActiveSetCycled: return "string active set did not settle";
    case StepStatus::NonFinite: return "state became non-finite";
    case StepStatus::BadInput: return "bad input (wrong size or non-finite)";
  }
  return "?";
}

VariationalIntegrator::VariationalIntegrator(ModelPtr model, IntegratorOptions options)
    : model_(std::move(model)),
      options_(options),
      nd_(model_->nd()),
      nk_(model_->nk()),
      ns_(model_->nstrings()),
      dyn_(*model_) {
  const int nq = nd_ + nk_;
  damping_ =
      options_.damping_override.size() == nd_ ? options_.damping_override : model_->dampingVector();
  damping_ *= options_.damping_scale;
  q1_full_.setZero(nq);
  q2_full_.setZero(nq);
  qm_full_.setZero(nq);
  qd2_.setZero(nd_);
  vel_.setZero(nd_);
  lambda_.setZero(ns_);
  Dh1_.setZero(ns_, nq);
  dist1_.setZero(ns_);
  residual_.setZero(nd_);
  active_.reserve(ns_);
  is_active_.assign(ns_, 0);
  limit_damping_active_.setZero(nd_);
  for (int m = 0; m <= ns_; ++m) {
    jac_.emplace_back(Eigen::MatrixXd::Zero(nd_ + m, nd_ + m));
    lu_.emplace_back(nd_ + m);
    rhs_.emplace_back(Eigen::VectorXd::Zero(nd_ + m));
    sol_.emplace_back(Eigen::VectorXd::Zero(nd_ + m));
  }
  lu_valid_.assign(ns_ + 1, 0);
  lu_set_.assign(ns_ + 1, std::vector<int>());
  for (auto& set : lu_set_) set.reserve(ns_);
  llt_ = Eigen::LLT<Eigen::MatrixXd>(nd_);
  tmp_nd_.setZero(nd_);
}

State VariationalIntegrator::makeState() const {
  State s;
  s.q.setZero(nd_);
  s.p.setZero(nd_);
  s.rho = model_->defaultInputs();
  return s;
}

StepReport VariationalIntegrator::makeReport() const {
  StepReport r;
  r.tension_N.setZero(ns_);
  r.taut.assign(ns_, 0);
  return r;
}

void VariationalIntegrator::assembleFullQ(const Eigen::VectorXd& qd, const Eigen::VectorXd& rho,
                                          Eigen::VectorXd& q) {
  q.head(nd_) = qd;
  q.tail(nk_) = rho;
}

// Residual of the DEL equation and the active constraints at the current guess (qd2_, lambda_),
// and, if asked, the Newton Jacobian.
void VariationalIntegrator::evaluateResidual(const State& x, const Eigen::VectorXd& rho_next,
                                             bool jacobian) {
  const double dt = options_.dt_s;
  assembleFullQ(qd2_, rho_next, q2_full_);
  forwardKinematics(*model_, dyn_, q2_full_);
  computeStrings(*model_, dyn_, q2_full_, false);

  qm_full_.noalias() = 0.5 * (q1_full_ + q2_full_);
  vel_.noalias() = (qd2_ - x.q) / dt;
  forwardKinematics(*model_, dyn_, qm_full_);
  computeLagrangian(*model_, dyn_, qm_full_, vel_,
                    jacobian ? LagrangianOrder::Second : LagrangianOrder::First);

  // Joint-limit dampers act only beyond a limit (seed 004 eq. 2.12, damper part).
  for (int k = 0; k < nd_; ++k) {
    const JointLimit& L = model_->dynamic[k].limit;
    const double qm = qm_full_[k];
    limit_damping_active_[k] = (L.damping > 0.0 && (qm > L.upper || qm < L.lower)) ? L.damping : 0;
  }
  // p1 + D1Ld + f- - Dh_A(q1)^T lambda, with D1Ld = dt/2 Lq - Lv and f- = -(C + C_lim)(q2 - q1).
  residual_ = x.p;
  residual_.noalias() += 0.5 * dt * dyn_.Lq;
  residual_ -= dyn_.Lv;
  residual_.array() -= (damping_ + limit_damping_active_).array() * (qd2_ - x.q).array();
  for (int j : active_) residual_.noalias() -= lambda_[j] * Dh1_.row(j).head(nd_).transpose();
  momentum_scale_ = std::max({x.p.cwiseAbs().maxCoeff(), dyn_.Lv.cwiseAbs().maxCoeff(),
                              0.5 * dt * dyn_.Lq.cwiseAbs().maxCoeff(), 1e-300});

  if (jacobian) assembleJacobian();
}

// The Newton Jacobian at the current evaluation (Lagrangian second derivatives at q_m, strings
// at q2 in dyn_.Dh):
//   [ dD1Ld/dq2 + df-/dq2   -Dh_A(q1)^T ]
//   [ Dh_A(q2)               0          ]
// with dD1Ld/dq2 = dt/4 Lqq + 1/2 Lqv - 1/2 Lqv^T - M/dt (DESIGN §4.2).
void VariationalIntegrator::assembleJacobian() {
  const double dt = options_.dt_s;
  const int m = static_cast<int>(active_.size());
  Eigen::MatrixXd& J = jac_[m];
  auto J11 = J.topLeftCorner(nd_, nd_);
  J11.noalias() = (0.25 * dt) * dyn_.Lqq;
  J11 += 0.5 * (dyn_.Lqv - dyn_.Lqv.transpose());
  J11 -= dyn_.M / dt;
  J11.diagonal() -= damping_ + limit_damping_active_;
  for (int i = 0; i < m; ++i) {
    const int j = active_[i];
    J.block(0, nd_ + i, nd_, 1) = -Dh1_.row(j).head(nd_).transpose();
    J.block(nd_ + i, 0, 1, nd_) = dyn_.Dh.row(j).head(nd_);
  }
  J.bottomRightCorner(m, m).setZero();
}

// Newton's method on (q_{d,k+1}, lambda_A).  The factorised Jacobian is kept across iterations
// and steps (the chord method, DESIGN §4.3) and refreshed at the current iterate whenever an
// iteration fails to shrink the residual four-fold, or the active set differs from the one it
// was factorised for.  Convergence is judged on the true residual, so reuse changes the
// iteration count, never the answer.
int VariationalIntegrator::solveNewton(const State& x, const Eigen::VectorXd& rho_next) {
  const int m = static_cast<int>(active_.size());
  double last_update = std::numeric_limits<double>::infinity();
  double prev_merit = std::numeric_limits<double>::infinity();
  bool fresh = false;  // the factorisation was made at an iterate of this solve
  for (int it = 0; it <= options_.max_newton_iterations; ++it) {
    evaluateResidual(x, rho_next, /*jacobian=*/false);
    double cerr = 0.0;
    for (int j : active_) cerr = std::max(cerr, std::abs(dyn_.distance[j] - dyn_.length[j]));
    const double rerr = residual_.cwiseAbs().maxCoeff();
    if (!std::isfinite(rerr) || !std::isfinite(cerr)) return -2;
    const double rtol = options_.residual_rel_tol * momentum_scale_;
    if (rerr <= rtol && cerr <= options_.constraint_tol_m) return it;
    // Stagnation at round-off: the last update no longer changes q, and the residuals are within
    // a thousand times the (then too strict) tolerances.
    if (last_update <= 1e-15 * (1.0 + qd2_.cwiseAbs().maxCoeff()) && rerr <= 1e3 * rtol &&
        cerr <= 1e3 * options_.constraint_tol_m)
      return it;
    if (it == options_.max_newton_iterations) break;
    const double merit = std::max(rerr / rtol, cerr / options_.constraint_tol_m);
    const bool slow = merit > 0.25 * prev_merit;
    if (!lu_valid_[m] || lu_set_[m] != active_ || (slow && !fresh) ||
        (slow && fresh && it > 0)) {
      // Exact Jacobian at this iterate (q_m is still the current forward kinematics, so only
      // the Lagrangian sweep is redone).
      computeLagrangian(*model_, dyn_, qm_full_, vel_, LagrangianOrder::Second);
      assembleJacobian();
      lu_[m].compute(jac_[m]);
      lu_valid_[m] = 1;
      lu_set_[m] = active_;
      fresh = true;
      ++factorizations_;
    }
    prev_merit = merit;
    Eigen::VectorXd& rhs = rhs_[m];
    rhs.head(nd_) = -residual_;
    for (int i = 0; i < m; ++i) rhs[nd_ + i] = -dyn_.h[active_[i]];
    sol_[m].noalias() = lu_[m].solve(rhs);
    if (!sol_[m].allFinite()) {
      lu_valid_[m] = 0;
      return -2;
    }
    last_update = sol_[m].head(nd_).cwiseAbs().maxCoeff();
    qd2_ += sol_[m].head(nd_);
    for (int i = 0; i < m; ++i) lambda_[active_[i]] += sol_[m][nd_ + i];
  }
  lu_valid_[m] = 0;  // do not start the next attempt from a Jacobian that failed here
  return -1;
}

StepStatus VariationalIntegrator::step(const State& x, const Eigen::VectorXd& rho_next, State& next,
                                       StepReport* report) {
  const double dt = options_.dt_s;
  if (x.q.size() != nd_ || x.p.size() != nd_ || x.rho.size() != nk_ || rho_next.size() != nk_ ||
      !x.q.allFinite() || !x.p.allFinite() || !x.rho.allFinite() || !rho_next.allFinite())
    return StepStatus::BadInput;

  // Quantities at q_k: string gradients (for the constraint forces) and the mass matrix for the
  // initial guess q2 = q1 + dt qdot, qdot = M^-1 (p1 - dt/2 dL/dq): p1 carries half a step of
  // forces (p = dL/dv + dt/2 dL/dq), which are not velocity -- with them a hanging puppet's guess
  // would be free fall, without them a puppet at rest is guessed exactly.
  assembleFullQ(x.q, x.rho, q1_full_);
  forwardKinematics(*model_, dyn_, q1_full_);
  computeStrings(*model_, dyn_, q1_full_, false);
  Dh1_ = dyn_.Dh;
  dist1_ = dyn_.distance;
  computeLagrangian(*model_, dyn_, q1_full_, tmp_nd_.setZero(), LagrangianOrder::MassMatrix);
  llt_.compute(dyn_.M);
  if (llt_.info() != Eigen::Success) return StepStatus::NotConverged;
  tmp_nd_ = x.p - 0.5 * dt * dyn_.Lq;
  llt_.solveInPlace(tmp_nd_);
  qd2_ = x.q + dt * tmp_nd_;

  // Start from the strings taut at q_k; then pivot one string at a time (least index first,
  // Murty's rule, finite for the P-matrix LCP that a step linearises to) until every taut
  // string pulls and no slack string is over-stretched.
  active_.clear();
  for (int j = 0; j < ns_; ++j) {
    is_active_[j] = dist1_[j] - dyn_.length[j] >= -1e-9 ? 1 : 0;
    if (is_active_[j]) active_.push_back(j);
    lambda_[j] = 0.0;
  }
  int iterations = 0, changes = 0;
  const int max_passes = 4 * ns_ + 4;
  bool settled = false;
  for (int pass = 0; pass < max_passes; ++pass) {
    const int it = solveNewton(x, rho_next);
    if (it == -2) return StepStatus::NonFinite;
    if (it < 0) return StepStatus::NotConverged;
    iterations += it;
    const double lambda_tol =
        10.0 * options_.residual_rel_tol * momentum_scale_ / std::max(1e-3, dist1_.maxCoeff());
    int flip = -1;
    for (int j = 0; j < ns_ && flip < 0; ++j) {
      if (is_active_[j] && lambda_[j] < -lambda_tol) flip = j;
      if (!is_active_[j] && dyn_.distance[j] - dyn_.length[j] > options_.constraint_tol_m) flip = j;
    }
    if (flip < 0) {
      settled = true;
      break;
    }
    is_active_[flip] ^= 1;
    lambda_[flip] = 0.0;
    active_.clear();
    for (int j = 0; j < ns_; ++j)
      if (is_active_[j]) active_.push_back(j);
    ++changes;
  }
  if (!settled) return StepStatus::ActiveSetCycled;

  if (report) {
    report->newton_iterations = iterations;
    report->active_set_changes = changes;
    report->energy_J = dyn_.kinetic_J + dyn_.potential_J;
    report->max_violation_m = 0.0;
    report->constraint_residual_m = 0.0;
    for (int j = 0; j < ns_; ++j) {
      const double over = dyn_.distance[j] - dyn_.length[j];
      report->max_violation_m = std::max(report->max_violation_m, over);
      report->taut[j] = is_active_[j];
      report->tension_N[j] = is_active_[j] ? std::max(0.0, lambda_[j]) * dist1_[j] / dt : 0.0;
      if (is_active_[j])
        report->constraint_residual_m = std::max(report->constraint_residual_m, std::abs(over));
    }
  }
  // p_{k+1} = D2 L_d(q_k, q_{k+1}) = dt/2 Lq + Lv at the converged midpoint.
  tmp_nd_.noalias() = 0.5 * dt * dyn_.Lq;
  tmp_nd_ += dyn_.Lv;
  next.q = qd2_;
  next.p = tmp_nd_;
  next.rho = rho_next;
  if (!next.q.allFinite() || !next.p.allFinite()) return StepStatus::NonFinite;
  return StepStatus::Ok;
}

StepStatus VariationalIntegrator::linearize(const State& x, const Eigen::VectorXd& rho_next,
                                            Eigen::MatrixXd& A, Eigen::MatrixXd& B) {
  State next = makeState();
  const StepStatus st = step(x, rho_next, next, nullptr);
  if (st != StepStatus::Ok) return st;
  const double dt = options_.dt_s;
  const int nq = nd_ + nk_, nx = 2 * nd_ + nk_, m = static_cast<int>(active_.size());

  // Second derivatives of the strings at q_k (for d(Dh(q_k)^T lambda)/d(q_k, rho_k)).
  forwardKinematics(*model_, dyn_, q1_full_);
  computeStrings(*model_, dyn_, q1_full_, true);
  Eigen::MatrixXd lambdaD2h = Eigen::MatrixXd::Zero(nq, nq);
  for (int j : active_) lambdaD2h += lambda_[j] * dyn_.D2h[j];
  // The converged step's Jacobian (strings at q_{k+1}, Lagrangian at the midpoint).
  evaluateResidual(x, rho_next, /*jacobian=*/true);
  const Eigen::MatrixXd Dh2 = dyn_.Dh;
  Eigen::PartialPivLU<Eigen::MatrixXd> lu(jac_[m]);

  // dF/dx and dF/du, F = [DEL residual; h_A(q2)].
  const Eigen::MatrixXd& Lqq = dyn_.Lqq;
  const Eigen::MatrixXd& Lqv = dyn_.Lqv;
  const Eigen::MatrixXd& M = dyn_.M;
  Eigen::MatrixXd dFdx = Eigen::MatrixXd::Zero(nd_ + m, nx);
  Eigen::MatrixXd dFdu = Eigen::MatrixXd::Zero(nd_ + m, nk_);
  // dD1Ld/dq1 = dt/4 Lqq - 1/2 Lqv - 1/2 Lqv^T + M/dt;  df-/dq1 = +C.
  Eigen::MatrixXd dR_dq1 = 0.25 * dt * Lqq - 0.5 * (Lqv + Lqv.transpose()) + M / dt;
  dR_dq1.diagonal() += damping_ + limit_damping_active_;
  dR_dq1 -= lambdaD2h.topLeftCorner(nd_, nd_);
  dFdx.block(0, 0, nd_, nd_) = dR_dq1;
  dFdx.block(0, nd_, nd_, nd_).setIdentity();
  dFdx.block(0, 2 * nd_, nd_, nk_) = -lambdaD2h.topRightCorner(nd_, nk_);
  for (int i = 0; i < m; ++i) dFdu.row(nd_ + i) = Dh2.row(active_[i]).tail(nk_);

  const Eigen::MatrixXd Zx = -lu.solve(dFdx);  // d(q2, lambda)/dx
  const Eigen::MatrixXd Zu = -lu.solve(dFdu);  // d(q2, lambda)/du
  // p2 = D2Ld(q1, q2): dD2Ld/dq1 = dt/4 Lqq - 1/2 Lqv + 1/2 Lqv^T - M/dt,
  //                    dD2Ld/dq2 = dt/4 Lqq + 1/2 Lqv + 1/2 Lqv^T + M/dt.
  const Eigen::MatrixXd dP_dq1 = 0.25 * dt * Lqq - 0.5 * Lqv + 0.5 * Lqv.transpose() - M / dt;
  const Eigen::MatrixXd dP_dq2 = 0.25 * dt * Lqq + 0.5 * (Lqv + Lqv.transpose()) + M / dt;

  A.setZero(nx, nx);
  B.setZero(nx, nk_);
  A.topRows(nd_) = Zx.topRows(nd_);
  A.middleRows(nd_, nd_) = dP_dq2 * Zx.topRows(nd_);
  A.block(nd_, 0, nd_, nd_) += dP_dq1;
  B.topRows(nd_) = Zu.topRows(nd_);
  B.middleRows(nd_, nd_) = dP_dq2 * Zu.topRows(nd_);
  B.bottomRows(nk_).setIdentity();
  return StepStatus::Ok;
}

State VariationalIntegrator::stateFromVelocity(const Eigen::VectorXd& q,
                                               const Eigen::VectorXd& qdot,
                                               const Eigen::VectorXd& rho) {
  assembleFullQ(q, rho, q1_full_);
  forwardKinematics(*model_, dyn_, q1_full_);
  computeLagrangian(*model_, dyn_, q1_full_, qdot, LagrangianOrder::First);
  return State{q, dyn_.Lv + 0.5 * options_.dt_s * dyn_.Lq, rho};
}

Eigen::VectorXd VariationalIntegrator::overStretch(const Eigen::VectorXd& q,
                                                   const Eigen::VectorXd& rho) {
  assembleFullQ(q, rho, q1_full_);
  forwardKinematics(*model_, dyn_, q1_full_);
  computeStrings(*model_, dyn_, q1_full_, false);
  return (dyn_.distance - dyn_.length).cwiseMax(0.0);
}

}  // namespace marionette
