// SPDX-License-Identifier: BSD-3-Clause
// The variational integrator (integrator.hpp): the public class, its solver's set-up, the step
// (predictor, Newton, the substep fallback) and the state from a velocity.
#include "marionette/models/integrator.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "marionette/models/cancel.hpp"
#include "marionette/models/rest_pose.hpp"
#include "variational_step.hpp"

namespace marionette {

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

namespace {

// The options' contacts, refused naming the field when they do not fit the model.
std::shared_ptr<const Contacts> checkedContacts(const Model& model,
                                                const std::shared_ptr<const Contacts>& contacts) {
  if (!contacts || contacts->rows() == 0) return nullptr;
  if (const std::string problem = contactsProblem(model, *contacts); !problem.empty())
    throw std::invalid_argument("integrator options: " + problem);
  return contacts;
}

}  // namespace

VariationalIntegrator::Impl::Impl(ModelPtr model, IntegratorOptions options)
    : model_(std::move(model)),
      options_(options),
      nd_(model_->nd()),
      nk_(model_->nk()),
      ns_(model_->nstrings()),
      nc_(ns_ + static_cast<int>(model_->stops.size())),
      contact_row_(nc_),
      contacts_(checkedContacts(*model_, options_.contacts)),
      dyn_(*model_),
      dyn2_(*model_) {
  const int nq = nd_ + nk_;
  damping_ =
      options_.damping_override.size() == nd_ ? options_.damping_override : model_->dampingVector();
  damping_ *= options_.damping_scale;
  int limited = 0;
  for (const DynamicVariable& v : model_->dynamic) limited += v.limit.isStop() ? 1 : 0;
  m_max_ = ns_ + limited;
  const int contact_rows = contacts_ ? contacts_->rows() : 0;
  nc_ += contact_rows;
  facet_id0_ = nc_ + 2 * contact_rows;
  n_ids_ = facet_id0_ + kFrictionFacets * contact_rows;
  self_row_ = contact_row_ + (contacts_ ? contacts_->surfaceRows() : 0);
  bool friction = false;
  for (int c = contact_row_; c < nc_; ++c) {
    friction |= hasFriction(c);
    tangents_.push_back(c < self_row_ ? tangentBasis(contactSurface(c).normal)
                                      : Eigen::Matrix<double, 3, 2>::Zero());
  }
  slip_basis_ = tangents_;
  segment_z_m_.assign(contact_rows, 0.0);
  for (int c = self_row_; c < nc_; ++c) has_segment_rows_ = has_segment_rows_ || isSegmentRow(c);
  m_max_ += std::min(contact_rows, nd_) * (friction ? 5 : 1);
  for (int i = 0; i < kFrictionFacets; ++i) {
    const double a = 2.0 * M_PI * i / kFrictionFacets;
    facet_normal_.col(i) << std::cos(a), std::sin(a);
  }
  contact_G1_.setZero(contact_rows, nd_);
  contact_G2_.setZero(contact_rows, nd_);
  contact_F1_.setZero(2 * contact_rows, nd_);
  contact_F2_.setZero(2 * contact_rows, nd_);
  contact_p1_.setZero(3, contact_rows);
  contact_p2_.setZero(3, contact_rows);
  contact_near_.assign(contact_rows, 0);
  live_rows_.reserve(nc_);
  for (int c = 0; c < contact_row_; ++c) live_rows_.push_back(c);
  mobility_.assign(contact_rows, Eigen::Matrix2d::Zero());
  constrained_mobility_.assign(contact_rows, Eigen::Matrix2d::Zero());
  constrained_mobility_of_.assign(contact_rows, -1);
  mobility_known_.assign(contact_rows, 0);
  mode_unsolved_.assign(contact_rows, 0);
  scale_tmp_.setZero(nd_);
  point_J_.setZero(3, nq);
  point_J2_.setZero(3, nq);
  if (contacts_) {
    posed_points_.setZero(3, contacts_->points.size());
    posed_origins_.setZero(3, contacts_->bodies.size());
    posed_rotations_.assign(contacts_->bodies.size(), Eigen::Matrix3d::Identity());
    point_near_.assign(contacts_->points.size(), 0);
    body_near_.assign(contacts_->bodies.size(), 0);
    near_points_.reserve(contacts_->points.size());
    near_bodies_.reserve(contacts_->bodies.size());
    posed_points1_ = posed_points_;
    posed_origins1_ = posed_origins_;
    posed_rotations1_ = posed_rotations_;
    point_moved_m_.setZero(contacts_->points.size());
    body_moved_m_.setZero(contacts_->bodies.size());
    body_turned_.setZero(contacts_->bodies.size());
    for (const ContactBody& body : contacts_->bodies)
      body_bound_m_.push_back(body.half_m.norm() + body.radius_m);
  }
  rel_J_.setZero(3, nd_);
  q1_full_.setZero(nq);
  q2_full_.setZero(nq);
  qm_full_.setZero(nq);
  qd2_.setZero(nd_);
  guess_.setZero(nd_);
  vel_.setZero(nd_);
  lambda_.setZero(n_ids_);
  gap1_.setZero(nc_);
  gap2_.setZero(nc_);
  h2_.setZero(n_ids_);
  dist1_.setZero(ns_);
  residual_.setZero(nd_);
  active_.reserve(n_ids_);
  is_active_.assign(n_ids_, 0);
  position_.assign(n_ids_, -1);
  flips_.assign(n_ids_, 0);
  stop_partner_.assign(nc_, -1);
  for (int i = 0; i < contact_row_ - ns_; ++i)
    for (int j = 0; j < contact_row_ - ns_; ++j)
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
  jac_.setZero(nd_ + m_max_, nd_ + m_max_);
  rhs_.setZero(nd_ + m_max_);
  sol_.setZero(nd_ + m_max_);
  mobility_rhs_.setZero(nd_ + m_max_);
  mobility_sol_.setZero(nd_ + m_max_);
  kkt_ = std::make_unique<StepKkt>(*model_, m_max_);
  residual_free_.setZero(nd_);
  last_correction_.setZero(nd_);
  sub_ = makeState();
  sub_u_.setZero(nk_);
  sub_report_ = makeReport();
  tension_sum_.setZero(ns_);
  contact_force_sum_.setZero(contact_rows);
  friction_sum_.setZero(3, contact_rows);
  llt_ = Eigen::LLT<Eigen::MatrixXd>(nd_);
  mass_lu_ = std::make_unique<TreeLu>(*model_);
  tmp_nd_.setZero(nd_);
}

VariationalIntegrator::VariationalIntegrator(ModelPtr model, IntegratorOptions options)
    : impl_(std::make_unique<Impl>(std::move(model), std::move(options))) {}
VariationalIntegrator::~VariationalIntegrator() = default;
VariationalIntegrator::VariationalIntegrator(VariationalIntegrator&&) noexcept = default;
VariationalIntegrator& VariationalIntegrator::operator=(VariationalIntegrator&&) noexcept = default;

const Model& VariationalIntegrator::model() const {
  return *impl_->model_;
}
const IntegratorOptions& VariationalIntegrator::options() const {
  return impl_->options_;
}
long VariationalIntegrator::factorizations() const {
  return impl_->factorizations_;
}
StepStatus VariationalIntegrator::step(const State& x, const Eigen::VectorXd& rho_next, State& next,
                                       StepReport* report) {
  return impl_->step(x, rho_next, next, report);
}
StepStatus VariationalIntegrator::linearize(const State& x, const Eigen::VectorXd& rho_next,
                                            Eigen::MatrixXd& A, Eigen::MatrixXd& B,
                                            Eigen::MatrixXd* tension_x,
                                            Eigen::MatrixXd* tension_u) {
  return impl_->linearize(x, rho_next, A, B, tension_x, tension_u);
}
StepStatus VariationalIntegrator::linearizeStep(const State& x, const Eigen::VectorXd& rho_next,
                                                StepLinearization& out) {
  return impl_->linearizeStep(x, rho_next, out);
}
State VariationalIntegrator::stateFromVelocity(const Eigen::VectorXd& q,
                                               const Eigen::VectorXd& qdot,
                                               const Eigen::VectorXd& rho) {
  return impl_->stateFromVelocity(q, qdot, rho);
}
State VariationalIntegrator::makeState() const {
  return impl_->makeState();
}
StepReport VariationalIntegrator::makeReport() const {
  return impl_->makeReport();
}

State VariationalIntegrator::Impl::makeState() const {
  State s;
  s.q.setZero(nd_);
  s.p.setZero(nd_);
  s.rho = model_->defaultInputs();
  return s;
}

StepReport VariationalIntegrator::Impl::makeReport() const {
  StepReport r;
  r.tension_N.setZero(ns_);
  r.taut.assign(ns_, 0);
  r.contact_force_N.setZero(nc_ - contact_row_);
  r.contact_friction_N.setZero(3, nc_ - contact_row_);
  return r;
}

StepStatus VariationalIntegrator::Impl::step(const State& x, const Eigen::VectorXd& rho_next,
                                             State& next, StepReport* report) {
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
    contact_force_sum_.setZero();
    friction_sum_.setZero();
    int iterations = 0, changes = 0, modes_at_once = 0;
    double worst = 0.0, residual = 0.0, penetration = 0.0;
    bool ok = true;
    for (int s = 1; s <= n && ok; ++s) {
      sub_u_ = x.rho + (rho_next - x.rho) * (static_cast<double>(s) / n);
      st = stepOnce(sub_, sub_u_, sub_, &sub_report_);
      ok = st == StepStatus::Ok;
      if (!ok) break;
      iterations += sub_report_.newton_iterations;
      changes += sub_report_.active_set_changes;
      modes_at_once += sub_report_.modes_at_once;
      worst = std::max(worst, sub_report_.max_violation_m);
      residual = std::max(residual, sub_report_.constraint_residual_m);
      penetration = std::max(penetration, sub_report_.max_penetration_m);
      tension_sum_ += sub_report_.tension_N;
      contact_force_sum_ += sub_report_.contact_force_N;
      friction_sum_ += sub_report_.contact_friction_N;
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
      report->modes_at_once = modes_at_once;
      report->max_violation_m = worst;
      report->constraint_residual_m = residual;
      report->max_penetration_m = penetration;
      report->tension_N = tension_sum_ / n;  // mean force over the step
      report->contact_force_N = contact_force_sum_ / n;
      report->contact_friction_N = friction_sum_ / n;
    }
    return StepStatus::Ok;
  }
  h_ = dt;
  if (st == StepStatus::NotConverged && has_segment_rows_ && !segments_off_) {
    // The capsules' middles (a middle's deepest point jumping between an end and an edge as the
    // capsule turns along a face, say) may leave the step without a solution the end rows alone
    // have: the step without them, reported.
    segments_off_ = true;
    st = step(x, rho_next, next, report);
    segments_off_ = false;
    if (report) report->segment_rows_dropped = st == StepStatus::Ok ? 1 : 0;
    return st;
  }
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

// The Newton iteration's first taut set: the constraints tight at q_k, contacts sticking, every
// multiplier 0.
void VariationalIntegrator::Impl::startActiveSet() {
  active_set_changes_ = 0;
  int count = 0;
  // (Only a taut id has a flag or an impulse: the last taut set's are cleared, not every id's,
  // which with a puppet's self-contact rows are thousands.  Only a live row may be tight.)
  for (int id : active_) {
    is_active_[id] = 0;
    lambda_[id] = 0.0;
  }
  for (const int c : live_rows_) {
    const bool contact = c >= contact_row_;
    const int cost = contact && hasFriction(c) ? 3 : 1;
    if (gap1_[c] >= -1e-9 && count + cost <= m_max_) {
      is_active_[c] = 1;
      count += cost;
      if (cost == 3) is_active_[tangentId(c, 0)] = is_active_[tangentId(c, 1)] = 1;
    }
  }
  rebuildActive();
  std::fill(mode_unsolved_.begin(), mode_unsolved_.end(), 0);
}

// One step of size h_ (no fallback).
StepStatus VariationalIntegrator::Impl::stepOnce(const State& x, const Eigen::VectorXd& rho_next,
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
  constraintsAt(q1_full_, dyn_, gap1_, nullptr, contact_p1_);
  if (self_row_ < nc_) {
    posed_points1_ = posed_points_;
    posed_origins1_ = posed_origins_;
    posed_rotations1_ = posed_rotations_;
  }
  self_rows_near_ = false;
  near_points_.clear();
  near_bodies_.clear();
  live_rows_.resize(contact_row_);  // (0, 1, ..., contact_row_ - 1 from the constructor)
  for (int c = contact_row_; c < nc_; ++c) {
    // (A segment row only where it takes part: else its ends' rows stand for it.)
    contact_near_[c - contact_row_] =
        gap1_[c] > -(c < self_row_ ? kContactReach_m : kSelfContactReach_m) &&
        (!isSegmentRow(c) ||
         (!segments_off_ && segmentRowGapPosed(c, kSegmentMargin_m) > -kSelfContactReach_m));
    mobility_known_[c - contact_row_] = 0;
    if (!contact_near_[c - contact_row_]) {
      gap2_[c] = h2_[c] = -1.0;  // (the iteration evaluates only the near rows)
      continue;
    }
    self_rows_near_ = self_rows_near_ || c >= self_row_;
    live_rows_.push_back(c);
    if (c >= self_row_) {
      startSelfRow(c);
      const SelfContact& pair = selfContact(c);
      if (pair.point >= 0 && !point_near_[pair.point]) near_points_.push_back(pair.point);
      if (pair.point >= 0) point_near_[pair.point] = 1;
      for (const int b : {pair.body, pair.segment}) {
        if (b < 0 || body_near_[b]) continue;
        near_bodies_.push_back(b);
        body_near_[b] = 1;
      }
    }
    contactGradient(dyn_, c, contact_G1_, &contact_F1_);
  }
  for (int i : near_points_) point_near_[i] = 0;  // (the lists are this step's)
  for (int b : near_bodies_) body_near_[b] = 0;
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
  mass_lu_ok_ = options_.tree_factorization && mass_lu_->factor(dyn_.M);
  if (mass_lu_ok_) {
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

  guess_ = qd2_;
  startActiveSet();
  lcp_modes_ = options_.modes_at_once;
  int iterations = solveNewton(x, rho_next);
  int modes_at_once = lcp_modes_ ? 1 : 0;
  lcp_modes_ = false;
  // (Only where a contact row took part: touching, or joining or leaving the taut set.  Modes of
  // strings and stops alone that cycle fall back to substeps, as they do without contacts, so
  // that contacts near but idle leave the step the same to the bit.)
  if (iterations < 0 && !modes_at_once && contactsTookPart()) {
    // The rows' modes, chosen one at a time, cycled (two light feet: each one's mode answers the
    // other's): every row's mode at once, from the same guess (modesFromLcp).
    qd2_ = guess_;
    startActiveSet();
    lcp_modes_ = true;
    iterations = solveNewton(x, rho_next);
    lcp_modes_ = false;
    modes_at_once = 1;
  }
  if (iterations < 0) return StepStatus::NotConverged;  // (a non-finite iterate too: retry)
  // No answer inside a surface: a contact row that took no part (farther than kContactReach_m
  // at q_k, or beyond m_max_) and ends inside fails the step, and the substeps take it.
  if (self_row_ < nc_) {
    poseSelfContacts(dyn2_);
    point_moved_m_ = (posed_points_ - posed_points1_).colwise().norm().transpose();
    body_moved_m_ = (posed_origins_ - posed_origins1_).colwise().norm().transpose();
    for (std::size_t b = 0; b < posed_rotations_.size(); ++b)
      body_turned_[b] = (posed_rotations_[b] - posed_rotations1_[b]).norm();
  }
  double max_penetration_m = 0.0;
  for (int c = contact_row_; c < nc_; ++c) {
    const bool far_self = c >= self_row_ && !contact_near_[c - contact_row_];
    const double gap = !far_self            ? gap2_[c]
                       : !mayHaveReached(c) ? -1.0
                       : isSegmentRow(c)
                           ? (segments_off_ ? -1.0 : segmentRowGapPosed(c, 2.0 * kSegmentMargin_m))
                           : selfGeometryPosed(c).gap;
    if (!is_active_[c] && gap > options_.constraint_tol_m) return StepStatus::NotConverged;
    max_penetration_m = std::max(max_penetration_m, gap);
  }

  if (report) {
    // (Sized once: a report from makeReport() is already.)
    if (report->tension_N.size() != ns_ || static_cast<int>(report->taut.size()) != ns_ ||
        report->contact_force_N.size() != nc_ - contact_row_ ||
        report->contact_friction_N.cols() != nc_ - contact_row_)
      *report = makeReport();
    report->substeps = 1;
    report->segment_rows_dropped = 0;
    report->newton_iterations = iterations;
    report->active_set_changes = active_set_changes_;
    report->modes_at_once = modes_at_once;
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
    for (int c = ns_; c < contact_row_; ++c) report->stops_active += is_active_[c];
    report->contacts_active = 0;
    report->contacts_sliding = 0;
    report->max_penetration_m = max_penetration_m;
    report->contact_force_N.setZero();
    report->contact_friction_N.setZero();
    for (std::size_t row = contact_row_; row < live_rows_.size(); ++row) {  // (a taut one is)
      const int c = live_rows_[row];
      if (!is_active_[c]) continue;
      const int r = c - contact_row_;
      ++report->contacts_active;
      report->contact_force_N[r] = std::max(0.0, lambda_[c]) / dt;
      if (hasFriction(c)) {
        const Eigen::Matrix<double, 3, 2>& t = tangentsOf(c);
        report->contact_friction_N.col(r) =
            (t.col(0) * lambda_[tangentId(c, 0)] + t.col(1) * lambda_[tangentId(c, 1)]) / dt;
        report->contacts_sliding += sliding(c);
      }
    }
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

State VariationalIntegrator::Impl::stateFromVelocity(const Eigen::VectorXd& q,
                                                     const Eigen::VectorXd& qdot,
                                                     const Eigen::VectorXd& rho) {
  assembleFullQ(q, rho, q1_full_);
  forwardKinematics(*model_, dyn_, q1_full_);
  computeLagrangian(*model_, dyn_, q1_full_, qdot, LagrangianOrder::First);
  return State{q, dyn_.Lv + 0.5 * options_.dt_s * dyn_.Lq, rho};
}

}  // namespace marionette
