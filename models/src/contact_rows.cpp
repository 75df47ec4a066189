// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/contact_rows.hpp"

#include <algorithm>

namespace marionette {

ContactRows::ContactRows(const Model& model, const Contacts& contacts)
    : model_(model),
      contacts_(contacts),
      nd_(model.nd()),
      held_(contacts.rows(), 0),
      anchor_(contacts.rows(), Eigen::Vector3d::Zero()),
      held_point_m_(contacts.rows(), Eigen::Vector3d::Zero()),
      tangents_(contacts.rows(), Eigen::Matrix<double, 3, 2>::Zero()),
      point_J_(3, model.nq()),
      body_J_(3, model.nq()),
      rel_J_(3, model.nd()) {}

int ContactRows::pointFrame(int row) const {
  const int surface_rows = contacts_.surfaceRows();
  if (row < surface_rows) return contacts_.points[row % contacts_.points.size()].frame;
  const SelfContact& pair = contacts_.self[row - surface_rows];
  return pair.segment >= 0 ? contacts_.bodies[pair.segment].frame
                           : contacts_.points[pair.point].frame;
}

int ContactRows::bodyFrame(int row) const {
  const int surface_rows = contacts_.surfaceRows();
  return row < surface_rows ? -1 : contacts_.bodies[contacts_.self[row - surface_rows].body].frame;
}

double ContactRows::friction(int row) const {
  const int surface_rows = contacts_.surfaceRows();
  return row < surface_rows ? contacts_.surfaces[row / contacts_.points.size()].friction
                            : contacts_.self[row - surface_rows].friction;
}

ContactRows::Posed ContactRows::pose(const DynamicsData& d, int row) const {
  Posed out;
  const int surface_rows = contacts_.surfaceRows();
  if (row < surface_rows) {
    const ContactPoint& pt = contacts_.points[row % contacts_.points.size()];
    const ContactSurface& s = contacts_.surfaces[row / contacts_.points.size()];
    out.frame = pt.frame;
    out.local_m = pt.local_m;
    out.p = pointPosition(d, pt.frame, pt.local_m);
    out.n = s.normal;
    out.gap = s.offset_m + pt.radius_m - s.normal.dot(out.p);
    return out;
  }
  const SelfContact& pair = contacts_.self[row - surface_rows];
  const ContactBody& body = contacts_.bodies[pair.body];
  const int f = std::max(body.frame, 0);  // (a stage body's frame is not read)
  poseCore(body, d.frame_R[f], d.frame_p[f], out.R, out.o);
  if (pair.segment >= 0) {
    // The capsule's core point that enters deepest (segmentCoreGap).
    const ContactBody& capsule = contacts_.bodies[pair.segment];
    Eigen::Matrix3d R_capsule;
    Eigen::Vector3d o_capsule;
    poseCore(capsule, d.frame_R[capsule.frame], d.frame_p[capsule.frame], R_capsule, o_capsule);
    const auto [a, b] = segmentEnds(capsule, R_capsule, o_capsule, out.R, out.o);
    const SegmentGap s = segmentCoreGap(body, a, b, pair.radius_m);
    out.frame = capsule.frame;
    out.local_m = capsule.pose * Eigen::Vector3d(0.0, 0.0, (2.0 * s.t - 1.0) * capsule.half_m.z());
    out.p = out.o + out.R * s.x_core;
    out.gap = s.gap_m;
    out.n = out.R * s.normal_core;
    out.t = s.t;
    out.a_core = a;
    out.b_core = b;
    return out;
  }
  const ContactPoint& pt = contacts_.points[pair.point];
  out.frame = pt.frame;
  out.local_m = pt.local_m;
  out.p = pointPosition(d, pt.frame, pt.local_m);
  const CoreGap core = coreGap(body, out.R.transpose() * (out.p - out.o), pair.radius_m);
  out.gap = core.gap_m;
  out.n = out.R * core.normal_core;
  return out;
}

void ContactRows::relativeJacobian(const DynamicsData& d, int row, const Posed& posed) {
  pointJacobian(model_, d, posed.frame, posed.local_m, point_J_);
  rel_J_ = point_J_.leftCols(nd_);
  const int frame = bodyFrame(row);
  if (frame < 0) return;  // a surface, or the stage's body: they do not move
  // The body's material point at the centre.
  const Eigen::Vector3d local = d.frame_R[frame].transpose() * (posed.p - d.frame_p[frame]);
  pointJacobian(model_, d, frame, local, body_J_);
  rel_J_ -= body_J_.leftCols(nd_);
}

double ContactRows::partGap(const DynamicsData& d, int row) const {
  const Posed posed = pose(d, row);
  if (!contacts_.segmentRow(row)) return posed.gap;
  const SelfContact& pair = contacts_.self[row - contacts_.surfaceRows()];
  SegmentGap middle;
  middle.gap_m = posed.gap;
  middle.t = posed.t;
  return segmentRowGap(contacts_.bodies[pair.body], middle, posed.a_core, posed.b_core,
                       pair.radius_m);
}

double ContactRows::gap(const DynamicsData& d, int row, GradientRow gradient) {
  const Posed posed = pose(d, row);
  relativeJacobian(d, row, posed);
  gradient.noalias() = -posed.n.transpose() * rel_J_;
  return posed.gap;
}

ContactRows::SlipFrame ContactRows::slipFrame(const DynamicsData& d, int row,
                                              Eigen::MatrixXd* x_jacobian,
                                              Eigen::MatrixXd* axis_jacobian) {
  const Posed posed = pose(d, row);
  SlipFrame out;
  if (row < contacts_.surfaceRows()) {
    out.x = posed.p;
    out.basis = tangentBasis(posed.n);
  } else {
    out.R = posed.R;
    out.x = posed.R.transpose() * (posed.p - posed.o);
    out.basis = coreTangents(posed.R.transpose() * posed.n);
  }
  const bool segment = contacts_.segmentRow(row);
  if (segment) {
    out.t = posed.t;
    out.axis = posed.b_core - posed.a_core;
  }
  if (axis_jacobian) {
    axis_jacobian->setZero(3, nd_);
    if (segment) {
      // d(b - a)/dq = R^T (J_rel(b) - J_rel(a)), each end the capsule's material point.
      const ContactBody& capsule =
          contacts_.bodies[contacts_.self[row - contacts_.surfaceRows()].segment];
      Posed end = posed;
      for (const double side : {1.0, -1.0}) {
        end.local_m = capsule.pose * Eigen::Vector3d(0.0, 0.0, side * capsule.half_m.z());
        end.p = posed.o + posed.R * (side > 0 ? posed.b_core : posed.a_core);
        relativeJacobian(d, row, end);
        axis_jacobian->noalias() += side * (posed.R.transpose() * rel_J_);
      }
    }
  }
  if (!x_jacobian) return out;
  relativeJacobian(d, row, posed);
  if (row < contacts_.surfaceRows())
    *x_jacobian = rel_J_;
  else
    x_jacobian->noalias() = posed.R.transpose() * rel_J_;
  return out;
}

void ContactRows::hold(const DynamicsData& d, int row) {
  const Posed posed = pose(d, row);
  const Eigen::Matrix<double, 3, 2> tangents = tangentBasis(posed.n);
  const int frame = bodyFrame(row);
  held_point_m_[row] = posed.local_m;
  if (frame < 0) {
    anchor_[row] = posed.p;
    tangents_[row] = tangents;
  } else {
    anchor_[row] = d.frame_R[frame].transpose() * (posed.p - d.frame_p[frame]);
    tangents_[row] = d.frame_R[frame].transpose() * tangents;
  }
  held_[row] = 1;
}

void ContactRows::slip(const DynamicsData& d, int row, Eigen::Vector2d& s,
                       Eigen::Ref<Eigen::MatrixXd> S) {
  Posed held;
  held.frame = pointFrame(row);
  held.local_m = held_point_m_[row];
  held.p = pointPosition(d, held.frame, held.local_m);
  const Eigen::Vector3d& p = held.p;
  const int frame = bodyFrame(row);
  Eigen::Matrix<double, 3, 2> tangents = tangents_[row];
  Eigen::Vector3d anchor = anchor_[row];
  if (frame >= 0) {
    tangents = d.frame_R[frame] * tangents;
    anchor = d.frame_R[frame] * anchor + d.frame_p[frame];
  }
  s = tangents.transpose() * (p - anchor);
  relativeJacobian(d, row, held);
  S.noalias() = tangents.transpose() * rel_J_;
}

}  // namespace marionette
