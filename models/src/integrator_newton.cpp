// SPDX-License-Identifier: BSD-3-Clause
// The step's equations and their Newton iteration: the DEL residual with the constraint forces,
// its Jacobian, and the semismooth Newton on (q_{d,k+1}, lambda) and the taut set.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "marionette/models/cancel.hpp"
#include "variational_step.hpp"

namespace marionette {

void VariationalIntegrator::Impl::assembleFullQ(const Eigen::VectorXd& qd,
                                                const Eigen::VectorXd& rho, Eigen::VectorXd& q) {
  q.head(nd_) = qd;
  q.tail(nk_) = rho;
}

void VariationalIntegrator::Impl::constraintsAt(const Eigen::VectorXd& q, const DynamicsData& d,
                                                Eigen::VectorXd& gap, Eigen::VectorXd* h,
                                                Eigen::Matrix3Xd& contact_points,
                                                bool every_self_row) {
  gap.head(ns_) = d.distance - d.length;
  if (h) h->head(ns_) = d.h;
  for (int i = 0; i < contact_row_ - ns_; ++i) {
    const Model::StopRow& r = model_->stops[i];
    gap[ns_ + i] = r.sign * (q[r.variable] - r.bound);
    if (h) (*h)[ns_ + i] = gap[ns_ + i];
  }
  for (int c = contact_row_; c < self_row_; ++c) {
    const ContactPoint& point = contactPoint(c);
    const ContactSurface& surface = contactSurface(c);
    contact_points.col(c - contact_row_) = pointPosition(d, point.frame, point.local_m);
    gap[c] = surface.offset_m + point.radius_m -
             surface.normal.dot(contact_points.col(c - contact_row_));
    if (h) (*h)[c] = gap[c];
  }
  // (In the iteration, with no self row near, nothing to pose.)
  if (self_row_ < nc_ && (every_self_row || self_rows_near_)) poseSelfContacts(d, every_self_row);
  auto exact = [&](int c) {
    const SelfGeometry g = selfGeometryPosed(c);
    // (A segment row's friction holds its point at q_k over the step.)
    contact_points.col(c - contact_row_) =
        every_self_row || !isSegmentRow(c)
            ? g.x_core
            : segmentPointPosed(c, segment_z_m_[c - contact_row_]);
    gap[c] = g.gap;
    if (h) (*h)[c] = gap[c];
  };
  if (!every_self_row) {  // the near rows (the others' gap and h read -1 all the step: stepOnce)
    for (std::size_t row = contact_row_; row < live_rows_.size(); ++row)
      if (live_rows_[row] >= self_row_) exact(live_rows_[row]);
    return;
  }
  for (int c = self_row_; c < nc_; ++c) {
    // Broad phase: the point's sphere against the body's bounding sphere (radius
    // body_bound_m_), |x - clamp(x)| >= |p - o| - |half|.  Beyond reach, the bound is the gap
    // kept (at most the exact gap's -kSelfContactReach_m: not near, and the step's end bounds
    // it from there), and p - o the centre (|x| = |p - o|, what the end reads of it).
    // (A segment row: its capsule's core segment's point nearest the body's centre, and the
    // core's centre as p - o.)
    const SelfContact& pair = selfContact(c);
    Eigen::Vector3d apart;
    Eigen::Vector3d nearest_apart;
    if (pair.segment >= 0) {
      apart = posed_origins_.col(pair.segment) - posed_origins_.col(pair.body);
      const double half_m = contacts_->bodies[pair.segment].half_m.z();
      const Eigen::Vector3d axis = posed_rotations_[pair.segment].col(2);
      nearest_apart = apart - std::clamp(apart.dot(axis), -half_m, half_m) * axis;
    } else {
      apart = posed_points_.col(pair.point) - posed_origins_.col(pair.body);
      nearest_apart = apart;
    }
    const double radii_m = pair.radius_m + body_bound_m_[pair.body];
    const double beyond_m = radii_m + kSelfContactReach_m;
    const double apart2 = nearest_apart.squaredNorm();
    if (apart2 > beyond_m * beyond_m) {
      gap[c] = radii_m - std::sqrt(apart2);
      if (h) (*h)[c] = gap[c];
      contact_points.col(c - contact_row_) = apart;
      continue;
    }
    exact(c);
  }
}

void VariationalIntegrator::Impl::contactGradient(const DynamicsData& d, int c, Eigen::MatrixXd& G,
                                                  Eigen::MatrixXd* F) {
  const int r = c - contact_row_;
  if (c >= self_row_) {
    SelfGeometry g = selfGeometry(d, c);
    selfRelativeJacobian(d, c, g);
    G.row(r).noalias() = -(g.rotation * g.normal_core).transpose() * rel_J_;
    if (!F || !hasFriction(c)) return;
    if (isSegmentRow(c) && g.segment_z != segment_z_m_[r]) {
      // Its friction's rows are of the material point it holds (the deepest at q_k).
      g.segment_z = segment_z_m_[r];
      g.centre = g.segment_o + g.segment_R.col(2) * g.segment_z;
      selfRelativeJacobian(d, c, g);
    }
    F->middleRows(2 * r, 2).noalias() = (g.rotation * slip_basis_[r]).transpose() * rel_J_;
    return;
  }
  const ContactPoint& point = contactPoint(c);
  pointJacobian(*model_, d, point.frame, point.local_m, point_J_);
  G.row(r).noalias() = -contactSurface(c).normal.transpose() * point_J_.leftCols(nd_);
  if (F && hasFriction(c))
    F->middleRows(2 * r, 2).noalias() = tangentsOf(c).transpose() * point_J_.leftCols(nd_);
}

void VariationalIntegrator::Impl::poseSelfContacts(const DynamicsData& d, bool every) {
  auto posePoint = [&](int i) {
    const ContactPoint& point = contacts_->points[i];
    posed_points_.col(i) = pointPosition(d, point.frame, point.local_m);
  };
  auto poseBody = [&](int b) {
    const ContactBody& body = contacts_->bodies[b];
    const int f = std::max(body.frame, 0);  // (a stage body's frame is not read)
    Eigen::Vector3d origin;
    poseCore(body, d.frame_R[f], d.frame_p[f], posed_rotations_[b], origin);
    posed_origins_.col(b) = origin;
  };
  if (!every) {
    for (int i : near_points_) posePoint(i);
    for (int b : near_bodies_) poseBody(b);
    return;
  }
  for (std::size_t i = 0; i < contacts_->points.size(); ++i) posePoint(static_cast<int>(i));
  for (std::size_t b = 0; b < contacts_->bodies.size(); ++b) poseBody(static_cast<int>(b));
}

VariationalIntegrator::Impl::SelfGeometry VariationalIntegrator::Impl::selfGeometry(
    const DynamicsData& d, int c) const {
  const SelfContact& pair = selfContact(c);
  const ContactBody& body = contacts_->bodies[pair.body];
  SelfGeometry g;
  const int f = std::max(body.frame, 0);  // (a stage body's frame is not read)
  poseCore(body, d.frame_R[f], d.frame_p[f], g.rotation, g.origin);
  if (pair.segment >= 0) {
    const ContactBody& capsule = contacts_->bodies[pair.segment];
    poseCore(capsule, d.frame_R[capsule.frame], d.frame_p[capsule.frame], g.segment_R,
             g.segment_o);
    return segmentGap(c, g);
  }
  const ContactPoint& point = contactPoint(c);
  g.centre = pointPosition(d, point.frame, point.local_m);
  return selfGap(c, g);
}

VariationalIntegrator::Impl::SelfGeometry VariationalIntegrator::Impl::selfGeometryPosed(
    int c) const {
  const SelfContact& pair = selfContact(c);
  SelfGeometry g;
  g.rotation = posed_rotations_[pair.body];
  g.origin = posed_origins_.col(pair.body);
  if (pair.segment >= 0) {
    g.segment_R = posed_rotations_[pair.segment];
    g.segment_o = posed_origins_.col(pair.segment);
    return segmentGap(c, g);
  }
  g.centre = posed_points_.col(pair.point);
  return selfGap(c, g);
}

VariationalIntegrator::Impl::SelfGeometry VariationalIntegrator::Impl::segmentGap(
    int c, SelfGeometry g) const {
  const SelfContact& pair = selfContact(c);
  const ContactBody& capsule = contacts_->bodies[pair.segment];
  std::tie(g.segment_a, g.segment_b) =
      segmentEnds(capsule, g.segment_R, g.segment_o, g.rotation, g.origin);
  g.segment = segmentCoreGap(contacts_->bodies[pair.body], g.segment_a, g.segment_b, pair.radius_m);
  g.gap = g.segment.gap_m;
  g.normal_core = g.segment.normal_core;
  g.x_core = g.segment.x_core;
  g.segment_z = (2.0 * g.segment.t - 1.0) * capsule.half_m.z();
  g.centre = g.segment_o + g.segment_R.col(2) * g.segment_z;
  return g;
}

double VariationalIntegrator::Impl::segmentRowGapPosed(int c, double margin_m) const {
  const SelfGeometry g = selfGeometryPosed(c);
  const double gap = segmentRowGap(contacts_->bodies[selfContact(c).body], g.segment, g.segment_a,
                                   g.segment_b, selfContact(c).radius_m, margin_m);
  return std::isfinite(gap) ? gap : -1.0;
}

Eigen::Vector3d VariationalIntegrator::Impl::segmentPointPosed(int c, double segment_z) const {
  const SelfContact& pair = selfContact(c);
  return posed_rotations_[pair.body].transpose() *
         (posed_origins_.col(pair.segment) + posed_rotations_[pair.segment].col(2) * segment_z -
          posed_origins_.col(pair.body));
}

bool VariationalIntegrator::Impl::mayHaveReached(int c) const {
  // The gap is 1-Lipschitz in x = R^T (p - o), and
  // |x_{k+1} - x_k| <= |dp| + |do| + |R_{k+1} - R_k| |p_k - o_k|  (|p_k - o_k| = |x_k|).
  // A segment row's, the most over its points: its capsule's core turns about its centre, and
  // each point is within 2 half of the one contact_p1_ holds (the deepest, or the centre).
  const SelfContact& pair = selfContact(c);
  const double half_m =
      pair.segment >= 0 ? contacts_->bodies[pair.segment].half_m.z() : 0.0;
  const double moved =
      (pair.segment >= 0 ? body_moved_m_[pair.segment] + body_turned_[pair.segment] * half_m
                         : point_moved_m_[pair.point]) +
      body_moved_m_[pair.body] +
      body_turned_[pair.body] * (contact_p1_.col(c - contact_row_).norm() + 2.0 * half_m);
  return gap1_[c] + moved > options_.constraint_tol_m;
}

VariationalIntegrator::Impl::SelfGeometry VariationalIntegrator::Impl::selfGap(
    int c, SelfGeometry g) const {
  const SelfContact& pair = selfContact(c);
  const ContactBody& body = contacts_->bodies[pair.body];
  g.x_core.noalias() = g.rotation.transpose() * (g.centre - g.origin);
  const CoreGap core = coreGap(body, g.x_core, pair.radius_m);
  g.gap = core.gap_m;
  g.normal_core = core.normal_core;
  return g;
}

void VariationalIntegrator::Impl::segmentPointJacobian(const DynamicsData& d, int c,
                                                       double segment_z) {
  const ContactBody& capsule = contacts_->bodies[selfContact(c).segment];
  pointJacobian(*model_, d, capsule.frame,
                capsule.pose * Eigen::Vector3d(0.0, 0.0, segment_z), point_J_);
}

void VariationalIntegrator::Impl::selfRelativeJacobian(const DynamicsData& d, int c,
                                                       const SelfGeometry& g) {
  const int body_frame = contacts_->bodies[selfContact(c).body].frame;
  if (isSegmentRow(c)) {
    segmentPointJacobian(d, c, g.segment_z);
  } else {
    const ContactPoint& point = contactPoint(c);
    pointJacobian(*model_, d, point.frame, point.local_m, point_J_);
  }
  if (body_frame == kStageFrame) {  // (the stage's body does not move)
    rel_J_ = point_J_.leftCols(nd_);
    return;
  }
  // The body's material point at the centre (the normal is orthogonal to the difference between
  // it and the nearest point's velocities: the two give one gradient).
  const Eigen::Vector3d local =
      d.frame_R[body_frame].transpose() * (g.centre - d.frame_p[body_frame]);
  pointJacobian(*model_, d, body_frame, local, point_J2_);
  rel_J_.noalias() = point_J_.leftCols(nd_) - point_J2_.leftCols(nd_);
}

void VariationalIntegrator::Impl::startSelfRow(int c) {
  const SelfGeometry g = selfGeometry(dyn_, c);
  const int r = c - contact_row_;
  slip_basis_[r] = coreTangents(g.normal_core);
  tangents_[r] = g.rotation * slip_basis_[r];
  segment_z_m_[r] = g.segment_z;
}

Eigen::VectorXd VariationalIntegrator::Impl::selfImpulse(const DynamicsData& d, int c,
                                                         double lambda_n,
                                                         const Eigen::Vector2d& lambda_t) {
  const SelfGeometry g = selfGeometry(d, c);
  selfRelativeJacobian(d, c, g);
  const Eigen::Vector3d n = g.rotation * g.normal_core;
  const Eigen::Matrix<double, 3, 2> t = g.rotation * coreTangents(g.normal_core);
  return rel_J_.transpose() * (-lambda_n * n - t * lambda_t);
}

void VariationalIntegrator::Impl::rebuildActive() {
  // (position_ of an inactive id is -1: those of the last taut set are reset, then the new set's
  // ids, ascending.  Only a live row and its friction's ids may be taut, a facet only with its
  // contact row: the live rows', their tangents', their facets', each ascending as the ids are.)
  for (int id : active_) position_[id] = -1;
  active_.clear();
  for (const int c : live_rows_)
    if (is_active_[c]) active_.push_back(c);
  for (std::size_t row = contact_row_; row < live_rows_.size(); ++row)
    for (int k = 0; k < 2; ++k)
      if (const int t = tangentId(live_rows_[row], k); is_active_[t]) active_.push_back(t);
  for (std::size_t row = contact_row_; row < live_rows_.size(); ++row)
    if (const int c = live_rows_[row]; is_active_[c])
      for (int i = 0; i < kFrictionFacets; ++i)
        if (is_active_[facetId(c, i)]) active_.push_back(facetId(c, i));
  for (std::size_t i = 0; i < active_.size(); ++i) position_[active_[i]] = static_cast<int>(i);
}

// Residual of the DEL equation and the active constraints at the current guess (qd2_, lambda_),
// and, if asked, the Newton Jacobian, or just the Lagrangian's second derivatives for it.
void VariationalIntegrator::Impl::evaluateResidual(const State& x, const Eigen::VectorXd& rho_next,
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
  constraintsAt(q2_full_, dyn2_, gap2_, &h2_, contact_p2_, /*every_self_row=*/false);

  qm_full_.noalias() = 0.5 * (q1_full_ + q2_full_);
  vel_.noalias() = (qd2_ - x.q) / dt;
  forwardKinematics(*model_, dyn_, qm_full_, rigm_valid_, &cos_sin_m_);
  rigm_valid_ = true;
  second_valid_ = jacobian || second_derivatives;
  computeLagrangian(*model_, dyn_, qm_full_, vel_,
                    second_valid_ ? LagrangianOrder::Second : LagrangianOrder::First);

  // Joint damping plus the joint-limit dampers at the midpoint (Egger, BSc thesis, ETH Zurich 2013
  // eq. 2.12, damper part, faded in smoothly: jointLimitTerms).
  jointDamping(*model_, damping_, qm_full_, damping_now_, damping_slope_);
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

void VariationalIntegrator::Impl::applyMultipliers() {
  residual_ = residual_free_;
  for (int c : active_) {
    if (c < ns_) {
      residual_.noalias() -= lambda_[c] * dyn_.Dh.row(c).head(nd_).transpose();
    } else if (c < contact_row_) {
      const Model::StopRow& r = model_->stops[c - ns_];
      residual_[r.variable] -= lambda_[c] * r.sign;
    } else if (c < nc_) {
      residual_.noalias() -= lambda_[c] * contact_G1_.row(c - contact_row_).transpose();
      h2_[c] = gap2_[c];
    } else if (c < facet_id0_) {  // a friction impulse along a tangent: + J^T t lambda_t
      residual_.noalias() += lambda_[c] * contact_F1_.row(c - nc_).transpose();
    }  // (a facet's multiplier is a slip, no force)
  }
  // Friction's rows: the slip over the step (slipOf) + sum over the active facets of psi_i d_i
  // (maximal dissipation: zero), and each facet's d_i^T lambda_t - mu lambda_n.
  for (std::size_t row = contact_row_; row < live_rows_.size(); ++row) {  // (taut: near)
    const int c = live_rows_[row];
    if (!is_active_[c] || !hasFriction(c)) continue;
    const Eigen::Vector2d lambda_t(lambda_[tangentId(c, 0)], lambda_[tangentId(c, 1)]);
    const double mu_lambda_n = frictionOf(c) * lambda_[c];
    Eigen::Vector2d slip = slipOf(c);
    for (int i = 0; i < kFrictionFacets; ++i) {
      const int f = facetId(c, i);
      h2_[f] = facet_normal_.col(i).dot(lambda_t) - mu_lambda_n;
      if (is_active_[f]) slip += lambda_[f] * facet_normal_.col(i);
    }
    h2_[tangentId(c, 0)] = slip[0];
    h2_[tangentId(c, 1)] = slip[1];
  }
}

// The Newton Jacobian at the current evaluation (Lagrangian second derivatives at q_m,
// constraint gradients at q1 and q2):
//   [ dD1Ld/dq2 + df-/dq2   -G_A(q1)^T ]
//   [ G_A(q2)               0          ]
// with dD1Ld/dq2 = dt/4 Lqq + 1/2 Lqv - 1/2 Lqv^T - M/dt (docs/design.md, the integrator).
void VariationalIntegrator::Impl::assembleJacobian() {
  const double dt = h_;
  auto J11 = jac_.topLeftCorner(nd_, nd_);
  J11.noalias() = (0.25 * dt) * dyn_.Lqq;
  J11 += 0.5 * (dyn_.Lqv - dyn_.Lqv.transpose());
  J11 -= dyn_.M / dt;
  // d/dq2 of -c(q_m)(q2 - q1) = -c - c'(q_m)/2 (q2 - q1).
  J11.diagonal().array() -=
      damping_now_.array() + 0.5 * damping_slope_.array() * (qd2_ - q1_full_.head(nd_)).array();
  assembleMultiplierBlocks();
}

// The taut rows' gradients at q1 and q2 and the multipliers' own block, for the taut set in
// active_.
void VariationalIntegrator::Impl::assembleMultiplierBlocks() {
  const int m = static_cast<int>(active_.size());
  Eigen::MatrixXd& J = jac_;
  for (int i = 0; i < m; ++i) {
    const int c = active_[i];
    if (c < ns_) {
      J.block(0, nd_ + i, nd_, 1) = -dyn_.Dh.row(c).head(nd_).transpose();
      J.block(nd_ + i, 0, 1, nd_) = dyn2_.Dh.row(c).head(nd_);
    } else if (c < contact_row_) {
      const Model::StopRow& r = model_->stops[c - ns_];
      J.block(0, nd_ + i, nd_, 1).setZero();
      J.block(nd_ + i, 0, 1, nd_).setZero();
      J(r.variable, nd_ + i) = -r.sign;
      J(nd_ + i, r.variable) = r.sign;
    } else if (c < nc_) {
      contactGradient(dyn2_, c, contact_G2_, &contact_F2_);
      J.block(0, nd_ + i, nd_, 1) = -contact_G1_.row(c - contact_row_).transpose();
      J.block(nd_ + i, 0, 1, nd_) = contact_G2_.row(c - contact_row_);
    } else if (c < facet_id0_) {
      J.block(0, nd_ + i, nd_, 1) = contact_F1_.row(c - nc_).transpose();
      J.block(nd_ + i, 0, 1, nd_) = contact_F2_.row(c - nc_);
    } else {
      J.block(0, nd_ + i, nd_, 1).setZero();
      J.block(nd_ + i, 0, 1, nd_).setZero();
    }
  }
  // The multipliers' own block: zero for strings and stops; for a contact's rows, the
  // iteration's regularisation (kContactRegularization); a facet's row d_i^T lambda_t - mu
  // lambda_n and its multiplier's part in the slip rows.
  J.block(nd_, nd_, m, m).setZero();
  for (int i = 0; i < m; ++i) {
    const int c = active_[i];
    if (c < contact_row_) continue;
    if (c < facet_id0_) {
      const int contact = c < nc_ ? c : contactOfId(c);
      const double eps = regularizationOf(contact);
      J(nd_ + i, nd_ + i) = c < nc_ ? -eps : eps;
    } else {
      const int contact = contactOfId(c);
      const auto d = facet_normal_.col((c - facet_id0_) % kFrictionFacets);
      for (int k = 0; k < 2; ++k) {
        const int t = nd_ + position_[tangentId(contact, k)];
        J(nd_ + i, t) = d[k];
        J(t, nd_ + i) = d[k];
      }
      J(nd_ + i, nd_ + position_[contact]) = -frictionOf(contact);
    }
  }
}

bool VariationalIntegrator::Impl::contactsTookPart() const {
  for (std::size_t i = contact_row_; i < live_rows_.size(); ++i)
    if (is_active_[live_rows_[i]] || flips_[live_rows_[i]] > 0) return true;
  return false;
}

bool VariationalIntegrator::Impl::complementary(double lambda_tol, double facet_tol) const {
  // (A self row not near reads gap -1; a surface row's gap is exact wherever it is.)
  for (int c = 0; c < self_row_; ++c)
    if (is_active_[c] ? lambda_[c] < -lambda_tol : gap2_[c] > options_.constraint_tol_m)
      return false;
  for (std::size_t row = contact_row_; row < live_rows_.size(); ++row) {
    const int c = live_rows_[row];
    if (c >= self_row_ &&
        (is_active_[c] ? lambda_[c] < -lambda_tol : gap2_[c] > options_.constraint_tol_m))
      return false;
  }
  for (std::size_t row = contact_row_; row < live_rows_.size(); ++row) {
    const int c = live_rows_[row];
    if (!is_active_[c] || !hasFriction(c)) continue;
    for (int i = 0; i < kFrictionFacets; ++i) {
      const int f = facetId(c, i);
      if (is_active_[f] ? lambda_[f] < -options_.constraint_tol_m : h2_[f] > facet_tol)
        return false;
    }
  }
  return true;
}

// Newton's method on (q_{d,k+1}, lambda) together with the constraints' complementarity
// (lambda_c >= 0, g_c <= 0, one of them tight): a primal-dual active-set (semismooth Newton)
// iteration.  Before each Newton step the taut set is updated from the current iterate: a slack
// constraint that is violated joins it; a taut one whose multiplier would push (lambda_c < 0)
// leaves it, at most kMaxFlips times per constraint per step so that it cannot thrash.
// The exact Jacobian is factorised at the predictor and kept while each iteration shrinks the
// residual at least four-fold (the chord method, docs/design.md, the integrator); it is
// refactorised when convergence slows, and when the taut set changes (where a contact takes
// part and the iteration was converging, only the new set's rows: the Lagrangian block stays
// the chord's).  Modes chosen at once (lcp_modes_) are chosen at the first iterate, and again
// where Newton's method with them converges but not complementarily, or stalls.  A step that
// does not decrease the residual enough is halved (Armijo backtracking), and no correction
// exceeds kStepLimit (a trust region: a larger one within a single step leaves the basin of its
// solution).  Convergence is judged on the true residual and on complementarity.  Returns the
// iterations taken, or -1.
int VariationalIntegrator::Impl::solveNewton(const State& x, const Eigen::VectorXd& rho_next) {
  bool factored = false;  // kkt_ holds the Jacobian for the current taut set
  double last_update = std::numeric_limits<double>::infinity();
  double prev_merit = std::numeric_limits<double>::infinity();
  double alpha = 0.0;  // fraction of the current direction sol_[m] applied so far
  int m = static_cast<int>(active_.size());
  corrected_after_evaluation_ = false;
  kkt_factored_ = false;
  bool choose_modes = true;  // (lcp_modes_) modesFromLcp() at this iterate
  int modes_chosen_at = -1;
  bool lagrangian_factored = false;  // kkt_ holds a Lagrangian block of this solve's
  for (const int c : live_rows_) {   // (only a live row and its facets may flip)
    flips_[c] = 0;
    if (c >= contact_row_ && hasFriction(c))
      for (int i = 0; i < kFrictionFacets; ++i) flips_[facetId(c, i)] = 0;
  }
  const double ctol = options_.constraint_tol_m;
  // An active id's row in metres: strings and stops their gap, contacts and slips the function
  // Newton drives to zero, a facet's row (impulse) in units of facet_tol.
  auto rowError = [&](int id, double facet_tol) {
    if (id < contact_row_) return gap2_[id];
    return id < facet_id0_ ? h2_[id] : h2_[id] * (ctol / facet_tol);
  };
  // Merit for the line search: the 2-norm of the residual scaled by its tolerances, for which
  // the Newton direction is a descent direction with slope -1.
  auto meritOf = [&](double rtol) {
    double c2 = 0.0;
    for (int c : active_) {
      const double r = rowError(c, 10.0 * rtol) / ctol;
      c2 += r * r;
    }
    return std::sqrt((residual_ / rtol).squaredNorm() + c2);
  };
  auto constraintError = [&](double rtol) {
    double cerr = 0.0;
    for (int c : active_) cerr = std::max(cerr, std::abs(rowError(c, 10.0 * rtol)));
    return cerr;
  };
  for (int it = 0; it <= options_.max_newton_iterations; ++it) {
    // A long solve of a large model (a step of 254 joints iterates at ~3 ms) answers a cancel.
    if ((it & 7) == 7) throwIfCancelled("integrator step");
    // Without a factorisation for the current taut set, this iterate's Jacobian is next (unless it
    // has converged): its second derivatives come with the residual's sweep.
    evaluateResidual(x, rho_next, /*jacobian=*/false, /*second_derivatives=*/!factored);
    const double rtol = options_.residual_rel_tol * momentum_scale_;
    const double facet_tol = 10.0 * rtol;  // an impulse
    double rerr = residual_.cwiseAbs().maxCoeff();
    double cerr = constraintError(rtol);
    if (!std::isfinite(rerr) || !std::isfinite(cerr)) return -1;
    double merit = meritOf(rtol);
    // A correction of a few ulps of q: the residual is at its round-off floor, where neither a
    // smaller step nor another Newton step can decrease it.
    const bool at_roundoff = last_update <= 16 * std::numeric_limits<double>::epsilon() *
                                                (1.0 + qd2_.cwiseAbs().maxCoeff());
    if (alpha > 1e-4 && merit > (1.0 - 1e-4 * alpha) * prev_merit && !at_roundoff) {
      // No sufficient decrease (Armijo): take half of the last step back.
      alpha *= 0.5;
      qd2_ -= alpha * sol_.head(nd_);
      for (int i = 0; i < m; ++i) lambda_[active_[i]] -= alpha * sol_[nd_ + i];
      // Stalled at modes chosen at once: the next iterate's problem chooses again.
      if (alpha < 1.0 / 16 && lcp_modes_ && modes_chosen_at < it - 1) {
        choose_modes = true;
        alpha = 0.0;
        continue;
      }
      // Stalled by a sticking contact that cannot stick (its slip rows at odds with the others':
      // a string dragging a body that sticks at both ends): the one slipping most slides.
      if (alpha < 1.0 / 16 && !lcp_modes_ && slideStalledContact(m)) {
        rebuildActive();
        m = static_cast<int>(active_.size());
        factored = kkt_factored_ = false;
        alpha = 0.0;
        applyMultipliers();
      }
      continue;
    }
    // Complementarity: update the taut set from this iterate.
    const double lambda_tol = 10.0 * rtol / std::max(1e-3, dist1_.size() ? dist1_.maxCoeff() : 1.0);
    bool changed = false;
    int count = m;
    // Converging slowly at modes chosen at once (a regularised row held off its bound): choose
    // again, and where the problem chooses the same, give up (the substeps take the step).
    const bool slow = lcp_modes_ && it >= modes_chosen_at + 3 && merit > 0.5 * prev_merit;
    if (slow) choose_modes = true;
    if (lcp_modes_ && choose_modes) {  // every row's mode at once
      const int modes = modesFromLcp();
      if (modes < 0) return -1;
      changed = modes > 0;
      if (slow && modes == 0) return -1;
      choose_modes = false;
      modes_chosen_at = it;
      factored = kkt_factored_ = false;  // (jac_ was assembled at this iterate)
    }
    // (A contact row not near can neither be taut nor catch.)
    for (std::size_t row = 0; row < live_rows_.size() && !lcp_modes_; ++row) {
      const int c = live_rows_[row];
      if (flips_[c] >= kMaxFlips) continue;
      const bool contact = c >= contact_row_;
      const bool friction = contact && hasFriction(c);
      // A contact that sticks by pulling slides first (it may push then); it leaves if it pulls
      // as it slides.
      bool release = is_active_[c] && lambda_[c] < -lambda_tol;
      if (release && friction && !sliding(c)) {
        int facets[2];
        frictionMode(c, facets);
        release = facets[0] < 0 || flips_[facetId(c, facets[0])] >= kMaxFlips;
      }
      const bool catches = !is_active_[c] && gap2_[c] > ctol &&
                           count + (friction ? 3 : 1) <= m_max_ &&
                           (!contact || contact_near_[c - contact_row_]);
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
        if (friction) {  // a contact that leaves takes its friction along
          mode_unsolved_[c - contact_row_] = 1;
          for (int k = 0; k < 2; ++k) {
            is_active_[tangentId(c, k)] = is_active_[c];
            lambda_[tangentId(c, k)] = 0.0;
          }
          count += is_active_[c] ? 2 : -2;
          for (int i = 0; i < kFrictionFacets; ++i) {
            const int f = facetId(c, i);
            count -= is_active_[f];
            is_active_[f] = 0;
            lambda_[f] = 0.0;
          }
        }
      }
    }
    // Coulomb's cone: each touching contact sticks or slides.
    for (std::size_t row = contact_row_; row < live_rows_.size() && !lcp_modes_; ++row) {
      const int c = live_rows_[row];
      if (is_active_[c] && hasFriction(c)) changed |= updateFriction(c, count);
    }
    // The taut set changed while the iteration converged with a factorisation of this solve:
    // the chord may go on (below).  Only where a contact takes part, and not at modes chosen at
    // once: the strings' and stops' own steps stay as they were.
    const bool chord_on = changed && factored && lagrangian_factored && !lcp_modes_ &&
                          merit <= 0.25 * prev_merit && contactsTookPart();
    if (changed) {
      rebuildActive();
      m = static_cast<int>(active_.size());
      factored = kkt_factored_ = false;
      alpha = 0.0;
      applyMultipliers();  // lambda changed (the kinematics did not)
      rerr = residual_.cwiseAbs().maxCoeff();
      cerr = constraintError(rtol);
      merit = meritOf(rtol);
    } else if (rerr <= rtol && cerr <= ctol) {
      // Converged: complementary too?  (A constraint frozen by kMaxFlips may not be.)
      if (complementary(lambda_tol, facet_tol)) return it;
      // Modes chosen at once hold at the iterate they were chosen at, to first order: at the
      // solution of the step with them they may not, and the problem linearized there chooses
      // again (unless they were chosen right here).
      if (!lcp_modes_ || modes_chosen_at == it) return -1;
      choose_modes = true;
      alpha = 0.0;
      continue;
    } else if (at_roundoff && rerr <= 1e3 * rtol && cerr <= 1e3 * ctol) {
      return it;  // stagnation at round-off, within a thousand times the tolerances
    }
    if (it == options_.max_newton_iterations) break;
    const bool refactor = !factored || merit > 0.25 * prev_merit;
    // The contraction of the last correction, made with the matrix that is about to be reused.
    const double theta = !refactor && alpha == 1.0 ? merit / prev_merit : 1.0;
    if (chord_on) {  // (a change of the taut set: refactor is due)
      // Only the taut set changed, the iteration converging: the chord goes on with the last
      // factorisation's Lagrangian block (its second derivatives at an earlier iterate, still in
      // jac_), the new set's rows exact.  Should it then slow, the next iterate refactorises
      // exactly.  (The dense LU factorises the same matrix.)
      assembleMultiplierBlocks();
      if (!kkt_->refactorConstraints(jac_, m)) kkt_->factor(jac_, m, true);
      factored = kkt_factored_ = true;
      ++factorizations_;
    } else if (refactor) {
      // Exact Jacobian at this iterate (q_m is still the current forward kinematics, so at most
      // the Lagrangian sweep is redone).
      if (!second_valid_) computeLagrangian(*model_, dyn_, qm_full_, vel_, LagrangianOrder::Second);
      second_valid_ = true;
      assembleJacobian();
      kkt_->factor(jac_, m, !options_.tree_factorization);
      factored = kkt_factored_ = lagrangian_factored = true;
      ++factorizations_;
    }
    prev_merit = merit;
    auto rhs = rhs_.head(nd_ + m);
    auto sol = sol_.head(nd_ + m);
    rhs.head(nd_) = -residual_;
    for (int i = 0; i < m; ++i) rhs[nd_ + i] = -h2_[active_[i]];
    kkt_->solve(rhs, sol);
    std::fill(mode_unsolved_.begin(), mode_unsolved_.end(), 0);
    const double size = sol.head(nd_).cwiseAbs().maxCoeff();
    if (!sol.allFinite()) return -1;
    if (size > kStepLimit) sol *= kStepLimit / size;  // trust region
    alpha = 1.0;
    last_update = std::min(size, kStepLimit);
    qd2_ += sol.head(nd_);
    for (int i = 0; i < m; ++i) lambda_[active_[i]] += sol[nd_ + i];
    // The stopping rule of the simplified Newton method (Hairer & Wanner, "Solving Ordinary
    // Differential Equations II", Springer 1996, sec. IV.8): the iteration contracts by about
    // theta per correction with this matrix, so after this one the residual is about theta times
    // this evaluation's.  Where that is a tenth of the tolerances or less, and the taut
    // constraints already hold (so the step's report of them stands), this correction ends the
    // iteration without evaluating again, and the caller corrects p_{k+1} to first order.
    if (theta <= 0.05 && theta * merit <= 0.1 && cerr <= ctol && size <= kStepLimit) {
      if (complementary(lambda_tol, facet_tol)) {
        last_correction_ = sol.head(nd_);
        corrected_after_evaluation_ = true;
        return it + 1;
      }
    }
  }
  return -1;
}

}  // namespace marionette
