// SPDX-License-Identifier: BSD-3-Clause
#include "clearance_gradient.hpp"

#include <algorithm>

namespace marionette::detail {

ClearanceGradient::ClearanceGradient(ModelPtr model, CollisionModelPtr collision)
    : model_(std::move(model)), collision_(std::move(collision)) {
  point_jacobian_.resize(3, model_->nq());
}

Eigen::MatrixXd ClearanceGradient::pointOnLink(const DynamicsData& data, int link,
                                               const Eigen::Vector3d& p) {
  const int f = collision_->linkFrame(link);
  const Eigen::Vector3d local = data.frame_R[f].transpose() * (p - data.frame_p[f]);
  pointJacobian(*model_, data, f, local, point_jacobian_);
  return point_jacobian_;
}

Eigen::MatrixXd ClearanceGradient::pointOnString(const DynamicsData& data, int string,
                                                 const Eigen::Vector3d& p) {
  const String& str = model_->strings[string];
  const Eigen::Vector3d a = data.string_puppet_end[string], e = data.string_rig_end[string];
  const double span2 = (e - a).squaredNorm();
  const double t = span2 > 0 ? std::clamp((p - a).dot(e - a) / span2, 0.0, 1.0) : 0.0;
  pointJacobian(*model_, data, str.puppet_frame, str.puppet_point_m, point_jacobian_);
  Eigen::MatrixXd J = (1 - t) * point_jacobian_;
  pointJacobian(*model_, data, str.rig_frame, str.rig_point_m, point_jacobian_);
  J += t * point_jacobian_;
  return J;
}

Eigen::RowVectorXd ClearanceGradient::operator()(const DynamicsData& data, ContactKind kind,
                                                 int first, int second, const Eigen::Vector3d& p1,
                                                 const Eigen::Vector3d& p2, bool penetrating) {
  Eigen::RowVectorXd g = Eigen::RowVectorXd::Zero(model_->nq());
  const double d = (p1 - p2).norm();
  if (!(d >= 1e-12) || first < 0) return g;  // touching (or no points): no direction
  const Eigen::RowVector3d n = ((penetrating ? p2 - p1 : p1 - p2) / d).transpose();
  const bool string_first = kind == ContactKind::StringObstacle || kind == ContactKind::StringLink;
  g = n * (string_first ? pointOnString(data, first, p1) : pointOnLink(data, first, p1));
  if ((kind == ContactKind::LinkLink || kind == ContactKind::StringLink) && second >= 0)
    g -= n * pointOnLink(data, second, p2);
  return g;
}

}  // namespace marionette::detail
