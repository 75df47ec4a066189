// SPDX-License-Identifier: BSD-3-Clause
// The gradient in q of a clearance that CollisionChecker::clearance reports (environments/
// collision.hpp): the distance between its two nearest points moves along their normal with the
// points, each carried by its link (a point Jacobian) or by its string (the segment's point at the
// same fraction between the string's ends).  A pair with a fixed second (an obstacle, the bounds)
// moves with its first only.
#pragma once

#include <Eigen/Core>

#include "marionette/environments/collision.hpp"
#include "marionette/models/dynamics.hpp"

namespace marionette::detail {

class ClearanceGradient {
 public:
  ClearanceGradient(ModelPtr model, CollisionModelPtr collision);

  // d(distance)/dq (1 x n_q) of the pair (kind, first, second) whose nearest points are p1 (on
  // the first) and p2, with `data` holding forwardKinematics and computeStrings at q; when
  // `penetrating`, of the signed distance -depth, p1 and p2 each one's point deepest inside the
  // other (the gradient then points the other way along p1 - p2).  Zero when the points
  // coincide (no direction) or the pair is unknown (first < 0).
  Eigen::RowVectorXd operator()(const DynamicsData& data, ContactKind kind, int first, int second,
                                const Eigen::Vector3d& p1, const Eigen::Vector3d& p2,
                                bool penetrating = false);
  // The stage's nearest pair's, and the nearest pair's of anything, from one clearance result
  // (of either Penetration); and the nearest pair's the puppet may not touch.
  Eigen::RowVectorXd stage(const DynamicsData& data, const ClearanceResult& c) {
    return (*this)(data, c.stage_pair.kind, c.stage_first_index, -1, c.stage_point_first_m,
                   c.stage_point_second_m, c.stage_distance_m < 0);
  }
  Eigen::RowVectorXd nearest(const DynamicsData& data, const ClearanceResult& c) {
    return (*this)(data, c.pair.kind, c.first_index, c.second_index, c.point_first_m,
                   c.point_second_m, c.distance_m < 0);
  }
  Eigen::RowVectorXd forbidden(const DynamicsData& data, const ClearanceResult& c) {
    return (*this)(data, c.forbidden_pair.kind, c.forbidden_first_index, c.forbidden_second_index,
                   c.forbidden_point_first_m, c.forbidden_point_second_m,
                   c.forbidden_distance_m < 0);
  }

 private:
  Eigen::MatrixXd pointOnLink(const DynamicsData& data, int link, const Eigen::Vector3d& p);
  Eigen::MatrixXd pointOnString(const DynamicsData& data, int string, const Eigen::Vector3d& p);

  ModelPtr model_;
  CollisionModelPtr collision_;
  Eigen::MatrixXd point_jacobian_;  // 3 x n_q scratch
};

}  // namespace marionette::detail
