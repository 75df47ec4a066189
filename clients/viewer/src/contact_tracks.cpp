// SPDX-License-Identifier: BSD-3-Clause
#include "contact_tracks.hpp"

#include <Eigen/Geometry>
#include <map>

#include "marionette/environments/scene_contacts.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/viewer/view.hpp"

namespace marionette::viewer {

namespace {

// (kStageFrame: the identity; a stage body's pose is in the world frame.)
Eigen::Isometry3d framePose(const DynamicsData& data, int frame) {
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
  if (frame == kStageFrame) return pose;
  pose.linear() = data.frame_R[frame];
  pose.translation() = data.frame_p[frame];
  return pose;
}

}  // namespace

ContactTracks contactTracks(const ModelPtr& model_ptr, const ScenePtr& scene,
                            const std::vector<std::string>& names, const Eigen::MatrixXd& q) {
  const Model& model = *model_ptr;
  ContactTracks out;
  if (names.empty()) return out;
  const Scene none;
  const auto contacts = sceneContacts(model, scene ? *scene : none);
  std::map<std::string, int> row_of;
  for (int r = 0; contacts && r < contacts->rows(); ++r) row_of[contacts->rowName(r)] = r;
  std::vector<int> rows;
  for (const std::string& name : names) {
    const auto it = row_of.find(name);
    if (it == row_of.end())
      throw ViewError("contact pair '" + name + "': not one of '" + model.name + "'s" +
                      (scene ? " on '" + scene->name + "'" : std::string()));
    rows.push_back(it->second);
  }
  const Eigen::Isometry3d& stage = model.stage_pose;
  const Eigen::Index n = q.rows();
  out.at_m.assign(rows.size(), Eigen::MatrixXd(n, 3));
  out.push.assign(rows.size(), Eigen::MatrixXd(n, 3));
  DynamicsData data(model);
  for (Eigen::Index i = 0; i < n; ++i) {
    forwardKinematics(model, data, q.row(i).transpose());
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const int r = rows[k];
      Eigen::Vector3d centre, normal;
      double radius_m = 0.0;
      if (r < contacts->surfaceRows()) {
        const ContactPoint& point = contacts->points[r % contacts->points.size()];
        centre = framePose(data, point.frame) * point.local_m;
        normal = contacts->surfaces[r / contacts->points.size()].normal;
        radius_m = point.radius_m;
      } else {  // out of the body's core, as the step has it
        const SelfContact& pair = contacts->self[r - contacts->surfaceRows()];
        const ContactBody& body = contacts->bodies[pair.body];
        const Eigen::Isometry3d core = framePose(data, body.frame) * body.pose;
        radius_m = pair.radius_m;
        if (pair.segment >= 0) {  // (a capsule's middle: its point that enters deepest)
          const ContactBody& capsule = contacts->bodies[pair.segment];
          const Eigen::Isometry3d capsule_core = framePose(data, capsule.frame) * capsule.pose;
          const auto [a, b] =
              segmentEnds(capsule, capsule_core.linear(), capsule_core.translation(), core.linear(),
                          core.translation());
          const SegmentGap g = segmentCoreGap(body, a, b, pair.radius_m);
          centre = core * g.x_core;
          normal = core.linear() * g.normal_core;
        } else {
          const ContactPoint& point = contacts->points[pair.point];
          centre = framePose(data, point.frame) * point.local_m;
          normal = core.linear() * coreGap(body, core.inverse() * centre, pair.radius_m).normal_core;
        }
      }
      out.at_m[k].row(i) = (stage * (centre - radius_m * normal)).transpose();
      out.push[k].row(i) = (stage.linear() * normal).transpose();
    }
  }
  return out;
}

}  // namespace marionette::viewer
