// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/integrator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "marionette/models/cancel.hpp"
#include "marionette/models/rest_pose.hpp"
#include "step_kkt.hpp"
#include "tree_lu.hpp"

namespace marionette {

namespace {
// Trust region (rad or m): a Newton correction, or the initial guess's move, larger than this
// within a single step leaves the basin of the step's solution.
constexpr double kStepLimit = 0.25;
}  // namespace

const char* toString(StepStatus s) {
  switch (s) {
    case StepStatus::Ok: return "ok";
    case StepStatus::NotConverged: return "Newton iteration did not converge";
    case StepStatus::Unreachable: return "rig input out of the puppet's reach";
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
      nc_(ns_ + static_cast<int>(model_->stops.size())),
      dyn_(*model_),
      dyn2_(*model_) {
  const int nq = nd_ + nk_;
  damping_ =
      options_.damping_override.size() == nd_ ? options_.damping_override : model_->dampingVector();
  damping_ *= options_.damping_scale;
  int limited = 0;
  for (const DynamicVariable& v : model_->dynamic) limited += v.limit.isStop() ? 1 : 0;
  m_max_ = ns_ + limited;
  q1_full_.setZero(nq);
  q2_full_.setZero(nq);
  qm_full_.setZero(nq);
  qd2_.setZero(nd_);
  vel_.setZero(nd_);
  lambda_.setZero(nc_);
  gap1_.setZero(nc_);
  gap2_.setZero(nc_);
  h2_.setZero(nc_);
  dist1_.setZero(ns_);
  residual_.setZero(nd_);
  active_.reserve(nc_);
  is_active_.assign(nc_, 0);
  flips_.assign(nc_, 0);
  stop_partner_.assign(nc_, -1);
  for (int i = 0; i < nc_ - ns_; ++i)
    for (int j = 0; j < nc_ - ns_; ++j)
      if (i != j && model_->stops[i].variable == model_->stops[j].variable)
        stop_partner_[ns_ + i] = ns_ + j;
  for (const Frame& f : model_->frames)
    if (f.type == JointType::Rotate && f.axis_index >= 0 && f.variable < nd_ &&
        std::find(angle_variables_.begin(), angle_variables_.end(), f.variable) ==
            angle_variables_.end())
      angle_variables_.push_back(f.variable);
  cos_sin1_.setZero(2, nd_);
  cos_sin_m_.setZero(2, nd_);
  cos_sin2_.setZero(2, nd_);
  damping_now_.setZero(nd_);
  damping_slope_.setZero(nd_);
  for (int m = 0; m <= m_max_; ++m) {
    jac_.emplace_back(Eigen::MatrixXd::Zero(nd_ + m, nd_ + m));
    rhs_.emplace_back(Eigen::VectorXd::Zero(nd_ + m));
    sol_.emplace_back(Eigen::VectorXd::Zero(nd_ + m));
  }
  kkt_ = std::make_unique<StepKkt>(*model_, m_max_);
  residual_free_.setZero(nd_);
  last_correction_.setZero(nd_);
  sub_ = makeState();
  sub_u_.setZero(nk_);
  sub_report_ = makeReport();
  tension_sum_.setZero(ns_);
  llt_ = Eigen::LLT<Eigen::MatrixXd>(nd_);
  mass_lu_ = std::make_unique<TreeLu>(*model_);
  tmp_nd_.setZero(nd_);
}

VariationalIntegrator::~VariationalIntegrator() = default;
VariationalIntegrator::VariationalIntegrator(VariationalIntegrator&&) noexcept = default;
VariationalIntegrator& VariationalIntegrator::operator=(VariationalIntegrator&&) noexcept = default;

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

void VariationalIntegrator::constraintsAt(const Eigen::VectorXd& q, const DynamicsData& d,
                                          Eigen::VectorXd& gap, Eigen::VectorXd* h) {
  gap.head(ns_) = d.distance - d.length;
  if (h) h->head(ns_) = d.h;
  for (int i = 0; i < nc_ - ns_; ++i) {
    const Model::StopRow& r = model_->stops[i];
    gap[ns_ + i] = r.sign * (q[r.variable] - r.bound);
    if (h) (*h)[ns_ + i] = gap[ns_ + i];
  }
}

// Residual of the DEL equation and the active constraints at the current guess (qd2_, lambda_),
// and, if asked, the Newton Jacobian, or just the Lagrangian's second derivatives for it.
void VariationalIntegrator::evaluateResidual(const State& x, const Eigen::VectorXd& rho_next,
                                             bool jacobian, bool second_derivatives) {
  const double dt = h_;
  // The joint angles' cos and sin at q_m and q_{k+1} by angle addition from q_k's: one sincos of
  // the half step per angle instead of two of the angles.
  for (int k : angle_variables_) {
    const double half = 0.5 * (qd2_[k] - x.q[k]);
    const double ch = std::cos(half), sh = std::sin(half);
    const double c1 = cos_sin1_(0, k), s1 = cos_sin1_(1, k);
    const double cm = c1 * ch - s1 * sh, sm = s1 * ch + c1 * sh;
    cos_sin_m_(0, k) = cm;
    cos_sin_m_(1, k) = sm;
    cos_sin2_(0, k) = cm * ch - sm * sh;
    cos_sin2_(1, k) = sm * ch + cm * sh;
  }
  // The rig's frames depend on rho only, fixed within a step: each scratch computes them once
  // per step (rig2_valid_, rigm_valid_) and then updates just the puppet.
  assembleFullQ(qd2_, rho_next, q2_full_);
  forwardKinematics(*model_, dyn2_, q2_full_, rig2_valid_, &cos_sin2_);
  rig2_valid_ = true;
  computeStrings(*model_, dyn2_, q2_full_, false);
  constraintsAt(q2_full_, dyn2_, gap2_, &h2_);

  qm_full_.noalias() = 0.5 * (q1_full_ + q2_full_);
  vel_.noalias() = (qd2_ - x.q) / dt;
  forwardKinematics(*model_, dyn_, qm_full_, rigm_valid_, &cos_sin_m_);
  rigm_valid_ = true;
  second_valid_ = jacobian || second_derivatives;
  computeLagrangian(*model_, dyn_, qm_full_, vel_,
                    second_valid_ ? LagrangianOrder::Second : LagrangianOrder::First);

  // Joint damping plus the joint-limit dampers at the midpoint (Egger, BSc thesis, ETH Zurich 2013
  // eq. 2.12, damper part, faded in smoothly: jointLimitTerms).
  for (int k = 0; k < nd_; ++k) {
    const LimitTerms t = jointLimitTerms(model_->dynamic[k].limit, qm_full_[k]);
    damping_now_[k] = damping_[k] + t.c;
    damping_slope_[k] = t.dc;
  }
  // p1 + D1Ld + f- - Dh_A(q1)^T lambda, with D1Ld = dt/2 Lq - Lv and f- = -c(q_m) (q2 - q1).
  residual_free_ = x.p;
  residual_free_.noalias() += 0.5 * dt * dyn_.Lq;
  residual_free_ -= dyn_.Lv;
  residual_free_.array() -= damping_now_.array() * (qd2_ - x.q).array();
  applyMultipliers();
  momentum_scale_ = std::max({x.p.cwiseAbs().maxCoeff(), dyn_.Lv.cwiseAbs().maxCoeff(),
                              0.5 * dt * dyn_.Lq.cwiseAbs().maxCoeff(), 1e-300});

  if (jacobian) assembleJacobian();
}

void VariationalIntegrator::applyMultipliers() {
  residual_ = residual_free_;
  for (int c : active_) {
    if (c < ns_) {
      residual_.noalias() -= lambda_[c] * dyn_.Dh.row(c).head(nd_).transpose();
    } else {
      const Model::StopRow& r = model_->stops[c - ns_];
      residual_[r.variable] -= lambda_[c] * r.sign;
    }
  }
}

// The Newton Jacobian at the current evaluation (Lagrangian second derivatives at q_m,
// constraint gradients at q1 and q2):
//   [ dD1Ld/dq2 + df-/dq2   -G_A(q1)^T ]
//   [ G_A(q2)               0          ]
// with dD1Ld/dq2 = dt/4 Lqq + 1/2 Lqv - 1/2 Lqv^T - M/dt (docs/design.md, the integrator).
void VariationalIntegrator::assembleJacobian() {
  const double dt = h_;
  const int m = static_cast<int>(active_.size());
  Eigen::MatrixXd& J = jac_[m];
  auto J11 = J.topLeftCorner(nd_, nd_);
  J11.noalias() = (0.25 * dt) * dyn_.Lqq;
  J11 += 0.5 * (dyn_.Lqv - dyn_.Lqv.transpose());
  J11 -= dyn_.M / dt;
  // d/dq2 of -c(q_m)(q2 - q1) = -c - c'(q_m)/2 (q2 - q1).
  J11.diagonal().array() -=
      damping_now_.array() + 0.5 * damping_slope_.array() * (qd2_ - q1_full_.head(nd_)).array();
  for (int i = 0; i < m; ++i) {
    const int c = active_[i];
    if (c < ns_) {
      J.block(0, nd_ + i, nd_, 1) = -dyn_.Dh.row(c).head(nd_).transpose();
      J.block(nd_ + i, 0, 1, nd_) = dyn2_.Dh.row(c).head(nd_);
    } else {
      const Model::StopRow& r = model_->stops[c - ns_];
      J.block(0, nd_ + i, nd_, 1).setZero();
      J.block(nd_ + i, 0, 1, nd_).setZero();
      J(r.variable, nd_ + i) = -r.sign;
      J(nd_ + i, r.variable) = r.sign;
    }
  }
  J.bottomRightCorner(m, m).setZero();
}

// Newton's method on (q_{d,k+1}, lambda) together with the constraints' complementarity
// (lambda_c >= 0, g_c <= 0, one of them tight): a primal-dual active-set (semismooth Newton)
// iteration.  Before each Newton step the taut set is updated from the current iterate: a slack
// constraint that is violated joins it; a taut one whose multiplier would push (lambda_c < 0)
// leaves it, at most kMaxFlips times per constraint per step so that it cannot thrash.
// The exact Jacobian is factorised at the predictor and kept while each iteration shrinks the
// residual at least four-fold (the chord method, docs/design.md, the integrator); it is
// refactorised when the taut set changes or convergence slows.  A step that does not decrease the
// residual enough is halved (Armijo backtracking), and no correction exceeds kStepLimit (a trust
// region: a larger one within a single step leaves the basin of its solution).  Convergence is
// judged on the true residual and on complementarity.  Returns the iterations taken, or -1.
int VariationalIntegrator::solveNewton(const State& x, const Eigen::VectorXd& rho_next) {
  constexpr int kMaxFlips = 4;
  bool factored = false;  // kkt_ holds the Jacobian for the current taut set
  double last_update = std::numeric_limits<double>::infinity();
  double prev_merit = std::numeric_limits<double>::infinity();
  double alpha = 0.0;  // fraction of the current direction sol_[m] applied so far
  int m = static_cast<int>(active_.size());
  corrected_after_evaluation_ = false;
  for (int c = 0; c < nc_; ++c) flips_[c] = 0;
  // Merit for the line search: the 2-norm of the residual scaled by its tolerances, for which
  // the Newton direction is a descent direction with slope -1.
  auto meritOf = [&](double rtol) {
    double c2 = 0.0;
    for (int c : active_) {
      const double r = gap2_[c] / options_.constraint_tol_m;
      c2 += r * r;
    }
    return std::sqrt((residual_ / rtol).squaredNorm() + c2);
  };
  auto constraintError = [&] {
    double cerr = 0.0;
    for (int c : active_) cerr = std::max(cerr, std::abs(gap2_[c]));
    return cerr;
  };
  for (int it = 0; it <= options_.max_newton_iterations; ++it) {
    // A long solve of a large model (a step of 254 joints iterates at ~3 ms) answers a cancel.
    if ((it & 7) == 7) throwIfCancelled("integrator step");
    // Without a factorisation for the current taut set, this iterate's Jacobian is next (unless it
    // has converged): its second derivatives come with the residual's sweep.
    evaluateResidual(x, rho_next, /*jacobian=*/false, /*second_derivatives=*/!factored);
    const double rtol = options_.residual_rel_tol * momentum_scale_;
    double rerr = residual_.cwiseAbs().maxCoeff();
    double cerr = constraintError();
    if (!std::isfinite(rerr) || !std::isfinite(cerr)) return -1;
    double merit = meritOf(rtol);
    // A correction of a few ulps of q: the residual is at its round-off floor, where neither a
    // smaller step nor another Newton step can decrease it.
    const bool at_roundoff = last_update <= 16 * std::numeric_limits<double>::epsilon() *
                                                (1.0 + qd2_.cwiseAbs().maxCoeff());
    if (alpha > 1e-4 && merit > (1.0 - 1e-4 * alpha) * prev_merit && !at_roundoff) {
      // No sufficient decrease (Armijo): take half of the last step back.
      alpha *= 0.5;
      qd2_ -= alpha * sol_[m].head(nd_);
      for (int i = 0; i < m; ++i) lambda_[active_[i]] -= alpha * sol_[m][nd_ + i];
      continue;
    }
    // Complementarity: update the taut set from this iterate.
    const double lambda_tol = 10.0 * rtol / std::max(1e-3, dist1_.size() ? dist1_.maxCoeff() : 1.0);
    bool changed = false;
    int count = m;
    for (int c = 0; c < nc_; ++c) {
      if (flips_[c] >= kMaxFlips) continue;
      const bool release = is_active_[c] && lambda_[c] < -lambda_tol;
      const bool catches = !is_active_[c] && gap2_[c] > options_.constraint_tol_m && count < m_max_;
      if (release || catches) {
        is_active_[c] ^= 1;
        count += is_active_[c] ? 1 : -1;
        // A joint cannot touch both of its stops: catching one releases the other.
        const int partner = stop_partner_[c];
        if (is_active_[c] && partner >= 0 && is_active_[partner]) {
          is_active_[partner] = 0;
          lambda_[partner] = 0.0;
          --count;
        }
        lambda_[c] = 0.0;
        ++flips_[c];
        ++active_set_changes_;
        changed = true;
      }
    }
    if (changed) {
      active_.clear();
      for (int c = 0; c < nc_; ++c)
        if (is_active_[c]) active_.push_back(c);
      m = static_cast<int>(active_.size());
      factored = false;
      alpha = 0.0;
      applyMultipliers();  // lambda changed (the kinematics did not)
      rerr = residual_.cwiseAbs().maxCoeff();
      cerr = constraintError();
      merit = meritOf(rtol);
    } else if (rerr <= rtol && cerr <= options_.constraint_tol_m) {
      // Converged: complementary too?  (A constraint frozen by kMaxFlips may not be.)
      for (int c = 0; c < nc_; ++c)
        if ((is_active_[c] && lambda_[c] < -lambda_tol) ||
            (!is_active_[c] && gap2_[c] > options_.constraint_tol_m))
          return -1;
      return it;
    } else if (at_roundoff && rerr <= 1e3 * rtol && cerr <= 1e3 * options_.constraint_tol_m) {
      return it;  // stagnation at round-off, within a thousand times the tolerances
    }
    if (it == options_.max_newton_iterations) break;
    const bool refactor = !factored || merit > 0.25 * prev_merit;
    // The contraction of the last correction, made with the matrix that is about to be reused.
    const double theta = !refactor && alpha == 1.0 ? merit / prev_merit : 1.0;
    if (refactor) {
      // Exact Jacobian at this iterate (q_m is still the current forward kinematics, so at most
      // the Lagrangian sweep is redone).
      if (!second_valid_) computeLagrangian(*model_, dyn_, qm_full_, vel_, LagrangianOrder::Second);
      second_valid_ = true;
      assembleJacobian();
      kkt_->factor(jac_[m], m, !options_.tree_factorization);
      factored = true;
      ++factorizations_;
    }
    prev_merit = merit;
    Eigen::VectorXd& rhs = rhs_[m];
    rhs.head(nd_) = -residual_;
    for (int i = 0; i < m; ++i) rhs[nd_ + i] = -h2_[active_[i]];
    kkt_->solve(rhs, sol_[m]);
    const double size = sol_[m].head(nd_).cwiseAbs().maxCoeff();
    if (!sol_[m].allFinite()) return -1;
    if (size > kStepLimit) sol_[m] *= kStepLimit / size;  // trust region
    alpha = 1.0;
    last_update = std::min(size, kStepLimit);
    qd2_ += sol_[m].head(nd_);
    for (int i = 0; i < m; ++i) lambda_[active_[i]] += sol_[m][nd_ + i];
    // The stopping rule of the simplified Newton method (Hairer & Wanner, "Solving Ordinary
    // Differential Equations II", Springer 1996, sec. IV.8): the iteration contracts by about
    // theta per correction with this matrix, so after this one the residual is about theta times
    // this evaluation's.  Where that is a tenth of the tolerances or less, and the taut
    // constraints already hold (so the step's report of them stands), this correction ends the
    // iteration without evaluating again, and the caller corrects p_{k+1} to first order.
    if (theta <= 0.05 && theta * merit <= 0.1 && cerr <= options_.constraint_tol_m &&
        size <= kStepLimit) {
      bool complementary = true;
      for (int c = 0; c < nc_; ++c)
        complementary &= is_active_[c] ? lambda_[c] >= -lambda_tol
                                       : gap2_[c] <= options_.constraint_tol_m;
      if (complementary) {
        last_correction_ = sol_[m].head(nd_);
        corrected_after_evaluation_ = true;
        return it + 1;
      }
    }
  }
  return -1;
}

StepStatus VariationalIntegrator::step(const State& x, const Eigen::VectorXd& rho_next, State& next,
                                       StepReport* report) {
  if (x.q.size() != nd_ || x.p.size() != nd_ || x.rho.size() != nk_ || rho_next.size() != nk_ ||
      !x.q.allFinite() || !x.p.allFinite() || !x.rho.allFinite() || !rho_next.allFinite())
    return StepStatus::BadInput;
  const double dt = options_.dt_s;
  h_ = dt;
  StepStatus st = stepOnce(x, rho_next, next, report);
  if (st != StepStatus::NotConverged) return st;

  // Fallback: the same step as n = 2, 4, ... substeps, the rig moving linearly.  Light, fast
  // degrees of freedom (a thin limb's twist) can fold the step equation at a large dt so that it
  // has no solution near the last state; a smaller step has one.  Strings stay exact on every
  // substep.  The discrete momentum needs no conversion between step sizes: with the constraint
  // and damping forces F_k lumped at the start of each step, p_k = D2 L_d(q_{k-1}, q_k) =
  // dL/dv(q_k, qdot_k) - dt/2 F_k + O(dt^2), and the string and stop part of F_k lies along the
  // taut constraints' gradients, which the next step's multipliers absorb (the damping part,
  // (dt - h)/2 c qdot, is left out).  (Converting p as dL/dv + h/2 dL/dq with the velocity
  // M^-1 (p - dt/2 dL/dq) shifted it by (h - dt)/2 dL/dq: by half a step of every smooth force,
  // velocity-dependent ones included, which in a violent motion pumped energy in and left the
  // puppet spinning at thousands of rad/s; docs/design.md, the integrator.)
  for (int level = 1; level <= options_.max_substep_halvings; ++level) {
    throwIfCancelled("integrator step");
    const int n = 1 << level;
    const double h = dt / n;
    sub_ = x;
    h_ = h;
    tension_sum_.setZero();
    int iterations = 0, changes = 0;
    double worst = 0.0, residual = 0.0;
    bool ok = true;
    for (int s = 1; s <= n && ok; ++s) {
      sub_u_ = x.rho + (rho_next - x.rho) * (static_cast<double>(s) / n);
      st = stepOnce(sub_, sub_u_, sub_, &sub_report_);
      ok = st == StepStatus::Ok;
      if (!ok) break;
      iterations += sub_report_.newton_iterations;
      changes += sub_report_.active_set_changes;
      worst = std::max(worst, sub_report_.max_violation_m);
      residual = std::max(residual, sub_report_.constraint_residual_m);
      tension_sum_ += sub_report_.tension_N;
    }
    if (!ok) {
      if (st != StepStatus::NotConverged) break;
      continue;
    }
    h_ = dt;
    next = sub_;
    if (report) {
      *report = sub_report_;  // taut set and energy of the last substep
      report->substeps = n;
      report->newton_iterations = iterations;
      report->active_set_changes = changes;
      report->max_violation_m = worst;
      report->constraint_residual_m = residual;
      report->tension_N = tension_sum_ / n;  // mean force over the step
    }
    return StepStatus::Ok;
  }
  h_ = dt;
  if (st == StepStatus::NotConverged) {
    // Tell an impossible input from a hard step: can any configuration near x satisfy every
    // string and stop at the new input?  (The failure path; this may allocate.)
    Eigen::VectorXd q = x.q;
    if (!projectOntoStrings(*model_, q, rho_next, {})) {
      if (report) {
        assembleFullQ(q, rho_next, q2_full_);
        forwardKinematics(*model_, dyn2_, q2_full_);
        computeStrings(*model_, dyn2_, q2_full_, false);
        Eigen::Index worst = 0;
        (dyn2_.distance - dyn2_.length).maxCoeff(&worst);
        report->unreachable_string = static_cast<int>(worst);
      }
      rig2_valid_ = false;
      return StepStatus::Unreachable;
    }
  }
  return st;
}

// One step of size h_ (no fallback).
StepStatus VariationalIntegrator::stepOnce(const State& x, const Eigen::VectorXd& rho_next,
                                           State& next, StepReport* report) {
  const double dt = h_;

  // Quantities at q_k: string gradients (for the constraint forces) and the mass matrix for the
  // initial guess q2 = q1 + dt qdot, qdot = M^-1 (p1 - dt/2 dL/dq): p1 carries half a step of
  // forces (p = dL/dv + dt/2 dL/dq), which are not velocity -- with them a hanging puppet's guess
  // would be free fall, without them a puppet at rest is guessed exactly.
  assembleFullQ(x.q, x.rho, q1_full_);
  forwardKinematics(*model_, dyn_, q1_full_);
  cos_sin1_ = dyn_.joint_cos_sin.leftCols(nd_);
  computeStrings(*model_, dyn_, q1_full_, false);
  constraintsAt(q1_full_, dyn_, gap1_, nullptr);
  rig2_valid_ = rigm_valid_ = false;  // new step: new rig inputs
  dist1_ = dyn_.distance;
  computeLagrangian(*model_, dyn_, q1_full_, tmp_nd_.setZero(), LagrangianOrder::MassMatrix);
  // The first guess is the velocity of the previous interval, M^-1 (p - dt/2 dL/dq) (p carries
  // half a step of forces, which is not velocity), and every multiplier starts at 0.  It is a
  // function of this step's arguments only, never of the previous call: with a strings'
  // active set the converged answer can depend on the guess, and a planner's propagation from
  // a tree node must give what a re-simulation reaching the same state gives.  (A warm start
  // from the previous step's multipliers saved ~20 % of the Newton iterations, and let plans
  // diverge from their re-simulations.)
  tmp_nd_ = x.p;
  tmp_nd_.noalias() -= 0.5 * dt * dyn_.Lq;
  if (options_.tree_factorization && mass_lu_->factor(dyn_.M)) {
    mass_lu_->solveInPlace(tmp_nd_);
  } else {
    llt_.compute(dyn_.M);
    if (llt_.info() != Eigen::Success) return StepStatus::NotConverged;
    llt_.solveInPlace(tmp_nd_);
  }
  // Keep the guess sane: along a light direction of M (a thin limb's twist) p / M is no velocity
  // at all, so the move is capped at the trust region and clamped into the joint stops.
  tmp_nd_ *= dt;
  const double move = tmp_nd_.cwiseAbs().maxCoeff();
  if (move > kStepLimit) tmp_nd_ *= kStepLimit / move;
  qd2_ = x.q + tmp_nd_;
  for (const Model::StopRow& r : model_->stops)
    if (r.sign * (qd2_[r.variable] - r.bound) > 0.0) qd2_[r.variable] = r.bound;

  // Start from the constraints tight at q_k; the Newton iteration settles the rest.
  active_.clear();
  active_set_changes_ = 0;
  for (int c = 0; c < nc_; ++c) {
    is_active_[c] = gap1_[c] >= -1e-9 && static_cast<int>(active_.size()) < m_max_ ? 1 : 0;
    if (is_active_[c]) active_.push_back(c);
    lambda_[c] = 0.0;
  }
  const int iterations = solveNewton(x, rho_next);
  if (iterations < 0) return StepStatus::NotConverged;  // (a non-finite iterate too: retry)

  if (report) {
    report->substeps = 1;
    report->newton_iterations = iterations;
    report->active_set_changes = active_set_changes_;
    report->energy_J = dyn_.kinetic_J + dyn_.potential_J;
    report->max_violation_m = 0.0;
    report->constraint_residual_m = 0.0;
    for (int j = 0; j < ns_; ++j) {
      const double over = gap2_[j];
      report->max_violation_m = std::max(report->max_violation_m, over);
      report->taut[j] = is_active_[j];
      report->tension_N[j] = is_active_[j] ? std::max(0.0, lambda_[j]) * dist1_[j] / dt : 0.0;
      if (is_active_[j])
        report->constraint_residual_m = std::max(report->constraint_residual_m, std::abs(over));
    }
    report->stops_active = 0;
    for (int c = ns_; c < nc_; ++c) report->stops_active += is_active_[c];
  }
  // p_{k+1} = D2 L_d(q_k, q_{k+1}) = dt/2 Lq + Lv at the converged midpoint.
  tmp_nd_.noalias() = 0.5 * dt * dyn_.Lq;
  tmp_nd_ += dyn_.Lv;
  if (corrected_after_evaluation_) {
    // The last correction dq came after the last evaluation: add dD2Ld/dq2 dq, with
    // dD2Ld/dq2 = dt/4 Lqq + 1/2 (Lqv + Lqv^T) + M/dt from the factorised iterate's second
    // derivatives (dq is at the tolerance's scale, so the error is of its square).
    const Eigen::VectorXd& dq = last_correction_;
    tmp_nd_.noalias() += (0.25 * dt) * dyn_.Lqq * dq;
    tmp_nd_.noalias() += 0.5 * dyn_.Lqv * dq;
    tmp_nd_.noalias() += 0.5 * dyn_.Lqv.transpose() * dq;
    tmp_nd_.noalias() += (1.0 / dt) * dyn_.M * dq;
  }
  next.q = qd2_;
  next.p = tmp_nd_;
  next.rho = rho_next;
  if (!next.q.allFinite() || !next.p.allFinite()) return StepStatus::NonFinite;
  return StepStatus::Ok;
}

StepStatus VariationalIntegrator::linearize(const State& x, const Eigen::VectorXd& rho_next,
                                            Eigen::MatrixXd& A, Eigen::MatrixXd& B,
                                            Eigen::MatrixXd* tension_x,
                                            Eigen::MatrixXd* tension_u) {
  StepLinearization lin;
  const StepStatus st = linearizeStep(x, rho_next, lin);
  if (st != StepStatus::Ok) return st;
  A = std::move(lin.A);
  B = std::move(lin.B);
  if (tension_x) *tension_x = std::move(lin.tension_x);
  if (tension_u) *tension_u = std::move(lin.tension_u);
  return StepStatus::Ok;
}

StepStatus VariationalIntegrator::linearizeStep(const State& x, const Eigen::VectorXd& rho_next,
                                                StepLinearization& out) {
  // The exact linearization is of the single step (a step that needs substeps reports
  // NotConverged here).
  if (out.next.q.size() != nd_) out.next = makeState();
  if (out.report.tension_N.size() != ns_) out.report = makeReport();
  h_ = options_.dt_s;
  const StepStatus st = stepOnce(x, rho_next, out.next, &out.report);
  if (st != StepStatus::Ok) return st;
  Eigen::MatrixXd& A = out.A;
  Eigen::MatrixXd& B = out.B;
  const double dt = options_.dt_s;
  const int nq = nd_ + nk_, nx = 2 * nd_ + nk_, m = static_cast<int>(active_.size());

  // Second derivatives of the strings at q_k (for d(Dh(q_k)^T lambda)/d(q_k, rho_k)).
  forwardKinematics(*model_, dyn_, q1_full_);
  computeStrings(*model_, dyn_, q1_full_, false);
  rigm_valid_ = false;  // dyn_ now holds q_k's rig
  Eigen::MatrixXd lambdaD2h = Eigen::MatrixXd::Zero(nq, nq);
  for (int c : active_)
    if (c < ns_) addStringHessian(*model_, dyn_, c, lambda_[c], lambdaD2h);  // stops are linear
  // The converged step's Jacobian (strings at q_{k+1}, Lagrangian at the midpoint).
  evaluateResidual(x, rho_next, /*jacobian=*/true);
  Eigen::PartialPivLU<Eigen::MatrixXd> lu(jac_[m]);

  // dF/dx and dF/du, F = [DEL residual; h_A(q2)].
  const Eigen::MatrixXd& Lqq = dyn_.Lqq;
  const Eigen::MatrixXd& Lqv = dyn_.Lqv;
  const Eigen::MatrixXd& M = dyn_.M;
  // dF = [dF/dx, dF/du], solved and multiplied as one block.
  Eigen::MatrixXd dF = Eigen::MatrixXd::Zero(nd_ + m, nx + nk_);
  auto dFdx = dF.leftCols(nx);
  auto dFdu = dF.rightCols(nk_);
  // dD1Ld/dq1 = dt/4 Lqq - 1/2 Lqv - 1/2 Lqv^T + M/dt;  df-/dq1 = +C.
  Eigen::MatrixXd dR_dq1 = 0.25 * dt * Lqq - 0.5 * (Lqv + Lqv.transpose()) + M / dt;
  // d/dq1 of -c(q_m)(q2 - q1) = +c - c'(q_m)/2 (q2 - q1).
  dR_dq1.diagonal().array() +=
      damping_now_.array() - 0.5 * damping_slope_.array() * (qd2_ - x.q).array();
  dR_dq1 -= lambdaD2h.topLeftCorner(nd_, nd_);
  dFdx.block(0, 0, nd_, nd_) = dR_dq1;
  dFdx.block(0, nd_, nd_, nd_).setIdentity();
  dFdx.block(0, 2 * nd_, nd_, nk_) = -lambdaD2h.topRightCorner(nd_, nk_);
  for (int i = 0; i < m; ++i)  // (a stop's gradient has no rig part)
    if (active_[i] < ns_) dFdu.row(nd_ + i) = dyn2_.Dh.row(active_[i]).tail(nk_);

  const Eigen::MatrixXd Z = -lu.solve(dF);  // d(q2, lambda)/d(x, u)
  const auto Zx = Z.leftCols(nx);
  const auto Zu = Z.rightCols(nk_);
  // p2 = D2Ld(q1, q2): dD2Ld/dq1 = dt/4 Lqq - 1/2 Lqv + 1/2 Lqv^T - M/dt,
  //                    dD2Ld/dq2 = dt/4 Lqq + 1/2 Lqv + 1/2 Lqv^T + M/dt.
  const Eigen::MatrixXd dP_dq1 = 0.25 * dt * Lqq - 0.5 * Lqv + 0.5 * Lqv.transpose() - M / dt;
  const Eigen::MatrixXd dP_dq2 = 0.25 * dt * Lqq + 0.5 * (Lqv + Lqv.transpose()) + M / dt;

  A.setZero(nx, nx);
  B.setZero(nx, nk_);
  const Eigen::MatrixXd dP = dP_dq2 * Z.topRows(nd_);
  A.topRows(nd_) = Zx.topRows(nd_);
  A.middleRows(nd_, nd_) = dP.leftCols(nx);
  A.block(nd_, 0, nd_, nd_) += dP_dq1;
  B.topRows(nd_) = Zu.topRows(nd_);
  B.middleRows(nd_, nd_) = dP.rightCols(nk_);
  B.bottomRows(nk_).setIdentity();

  {
    // T_j = lambda_j |a_j - e_j|(q_k) / dt.  With h = 1/2 (d^2 - l^2), Dh = d dd/dq - l dl/dq,
    // and l depends only on the string's length variable (a kinematic one, or none).
    Eigen::MatrixXd& Tx = out.tension_x;
    Eigen::MatrixXd& Tu = out.tension_u;
    Tx.setZero(ns_, nx);
    Tu.setZero(ns_, nk_);
    for (int i = 0; i < m; ++i) {
      const int j = active_[i];
      if (j >= ns_) continue;  // a joint stop
      const double d = dist1_[j], lambda = std::max(0.0, lambda_[j]);
      Tx.row(j) = (d / dt) * Zx.row(nd_ + i);
      Tu.row(j) = (d / dt) * Zu.row(nd_ + i);
      Eigen::RowVectorXd dd = dyn_.Dh.row(j);  // n_q, at q_k
      const int lv = model_->strings[j].length_variable;
      if (lv >= 0) dd[lv] += dyn_.length[j];
      dd /= d;
      Tx.row(j).head(nd_) += (lambda / dt) * dd.head(nd_);
      Tx.row(j).tail(nk_) += (lambda / dt) * dd.tail(nk_);
    }
  }
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

}  // namespace marionette
