// SPDX-License-Identifier: BSD-3-Clause
#include "rest_points.hpp"

#include <memory>
#include <stdexcept>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette::detail {

RestPoints restPoints(const ModelPtr& model) {
  // The last model's, on this thread: a program of 4,096 keyframe clips asked for the same rest
  // pose 4,096 times.  (Models are immutable; the weak pointer tells a model that is gone from a
  // new one at its address.)
  thread_local std::weak_ptr<const Model> last_model;
  thread_local RestPoints last;
  if (!last_model.expired() && last_model.lock() == model) return last;
  const Model& m = *model;
  const RestPose rest = computeRestPose(model, m.defaultInputs());
  if (!rest.ok)
    throw std::runtime_error("model " + m.name + " has no rest pose at its default inputs (" +
                             rest.message + ")");
  DynamicsData data(m);
  forwardKinematics(m, data, m.configuration(rest.q, m.defaultInputs()));
  RestPoints out;
  out.q = rest.q;
  out.points_m.resize(3, static_cast<Eigen::Index>(m.points.size()));
  for (std::size_t p = 0; p < m.points.size(); ++p)
    out.points_m.col(static_cast<Eigen::Index>(p)) =
        m.stage_pose * pointPosition(data, m.points[p].frame, m.points[p].position_m);
  out.frame_origins_m.resize(3, static_cast<Eigen::Index>(m.frames.size()));
  for (std::size_t f = 0; f < m.frames.size(); ++f)
    out.frame_origins_m.col(static_cast<Eigen::Index>(f)) =
        m.stage_pose * pointPosition(data, static_cast<int>(f), Eigen::Vector3d::Zero());
  last_model = model;
  last = out;
  return out;
}

}  // namespace marionette::detail
