// SPDX-License-Identifier: BSD-3-Clause
#include "calm_reference.hpp"

#include <algorithm>
#include <limits>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette::detail {

std::vector<int> calmPoints(const Model& m, const std::vector<std::string>& targeted_points,
                            const std::vector<std::string>& targeted_variables,
                            const std::vector<std::string>& free_points) {
  std::vector<int> targeted_joints;
  for (const std::string& name : targeted_variables)
    targeted_joints.push_back(m.variableIndex(name));
  auto calm = [&](int p) {
    bool puppet = false;  // a dynamic joint carries it
    for (int f = m.points[p].frame; f >= 0; f = m.frames[f].parent) {
      const int v = m.frames[f].variable;
      puppet |= v >= 0 && v < m.nd();
      if (v >= 0 && std::find(targeted_joints.begin(), targeted_joints.end(), v) !=
                        targeted_joints.end())
        return false;
    }
    for (const std::string& name : targeted_points)
      for (int f = m.points[m.pointIndex(name)].frame; f >= 0; f = m.frames[f].parent)
        if (f == m.points[p].frame) return false;
    return puppet && std::find(free_points.begin(), free_points.end(), m.points[p].name) ==
                         free_points.end();
  };
  std::vector<int> out;
  for (int p = 0; p < static_cast<int>(m.points.size()); ++p)
    if (calm(p)) out.push_back(p);
  return out;
}

Eigen::MatrixXd restPointMotion(const ModelPtr& model, const Eigen::MatrixXd& inputs,
                                const std::vector<int>& points, const Eigen::VectorXd& start_q,
                                std::shared_ptr<const Contacts> contacts) {
  const Model& m = *model;
  const auto S = inputs.rows();
  const auto P = static_cast<Eigen::Index>(points.size());
  Eigen::MatrixXd out =
      Eigen::MatrixXd::Constant(S, 3 * P, std::numeric_limits<double>::quiet_NaN());
  DynamicsData data(m);
  const RestPoseOptions settling = standingOn(contacts);
  RestPose last;  // the last rest pose found (continued from)
  for (Eigen::Index k = 0; k < S; ++k) {
    const Eigen::VectorXd rho = inputs.row(k).transpose();
    RestPose rest;
    if (last.ok) {
      RestPoseOptions continuation = settling;
      continuation.max_settle_steps = 0;
      continuation.continue_from = &last;
      rest = computeRestPose(model, rho, &last.q, continuation);
    }
    if (!rest.ok) rest = computeRestPose(model, rho, last.ok ? &last.q : &start_q, settling);
    if (!rest.ok) continue;
    forwardKinematics(m, data, m.configuration(rest.q, rho));
    for (Eigen::Index i = 0; i < P; ++i) {
      const Point& point = m.points[points[i]];
      out.block<1, 3>(k, 3 * i) = pointPosition(data, point.frame, point.position_m).transpose();
    }
    last = std::move(rest);
  }
  return out;
}

void holdCalm(HorizonTracking& setup, const std::vector<int>& points, double weight,
              const Eigen::MatrixXd& reference) {
  const auto columns = setup.track_targets_m.cols();
  setup.track_targets_m.conservativeResize(reference.rows(), columns + reference.cols());
  setup.track_targets_m.rightCols(reference.cols()) = reference;
  setup.track_point_weight.assign(setup.track_points.size(), 1.0);
  for (int p : points) {
    setup.track_points.push_back(p);
    setup.track_point_weight.push_back(weight);
  }
}

}  // namespace marionette::detail
