// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/contact.hpp"

namespace marionette {

std::vector<ContactPoint> contactPoints(const Model& model) {
  std::vector<ContactPoint> out;
  for (const Geometry& g : model.geometry) {
    if (g.frame < 0 || !model.frame_moved_by_dynamic[g.frame]) continue;
    const Shape& s = g.shape;
    if (s.type == ShapeType::Sphere) {
      out.push_back({g.name, g.frame, g.pose.translation(), s.radius_m});
    } else if (s.type == ShapeType::Capsule) {
      // Along the capsule's local z axis, centred (shape.hpp).
      const Eigen::Vector3d half = g.pose.linear() * Eigen::Vector3d(0, 0, 0.5 * s.length_m);
      out.push_back({g.name, g.frame, g.pose.translation() + half, s.radius_m});
      out.push_back({g.name, g.frame, g.pose.translation() - half, s.radius_m});
    }
  }
  return out;
}

ContactSurface floorSurface(const Model& model) {
  // Stage from world: x_s = R x_w + t; the floor's solid side z_s <= 0 is
  // (R^T e_z) . x_w <= -t_z.
  ContactSurface floor;
  floor.name = "floor";
  floor.normal = model.stage_pose.linear().transpose() * Eigen::Vector3d::UnitZ();
  floor.offset_m = -model.stage_pose.translation().z();
  return floor;
}

}  // namespace marionette
