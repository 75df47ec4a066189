// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/environments/scene_contacts.hpp"

#include <string>

#include "marionette/models/field_error.hpp"

namespace marionette {

std::shared_ptr<const Contacts> sceneContacts(const Model& model, const Scene& scene,
                                              const std::optional<Eigen::Isometry3d>& stage_pose) {
  auto contacts = std::make_shared<Contacts>();
  contacts->points = contactPoints(model);
  // World from stage, as the collision model maps the scene (x_s = S x_w).
  const Eigen::Isometry3d world_from_stage = stage_pose.value_or(model.stage_pose).inverse();
  for (const Obstacle& o : scene.obstacles) {
    if (!o.contact || o.shape.type != ShapeType::Plane) continue;
    // {x_l : n . x_l <= d} in the obstacle's frame; x_l = P^-1 x_w with P = world from obstacle.
    const Eigen::Isometry3d P = world_from_stage * o.pose;
    const double scale = o.shape.normal.norm();
    ContactSurface s;
    s.name = o.name;
    s.normal = P.linear() * o.shape.normal / scale;
    s.offset_m = o.shape.offset_m / scale + s.normal.dot(P.translation());
    s.friction = o.friction;
    contacts->surfaces.push_back(s);
  }
  addSelfContacts(model, *contacts);
  if (contacts->bodies.empty())  // (self-contact off: the capsules, for their middles' rows)
    for (const ContactBody& b : contactBodies(model))
      if (isCapsule(b)) contacts->bodies.push_back(b);
  ContactBody body;
  for (std::size_t i = 0; i < scene.obstacles.size(); ++i) {
    const Obstacle& o = scene.obstacles[i];
    if (!o.contact || !contactBody(o.name, kStageFrame, world_from_stage * o.pose, o.shape, body))
      continue;
    if (contacts->self.size() + contacts->points.size() >
        static_cast<std::size_t>(kMaxSelfContacts))
      throw FieldError("obstacles[" + std::to_string(i) + "].contact",
                       "more than " + std::to_string(kMaxSelfContacts) +
                           " pairs of the puppet's contact points and bodies it may touch");
    const int b = static_cast<int>(contacts->bodies.size());
    contacts->bodies.push_back(body);
    for (std::size_t p = 0; p < contacts->points.size(); ++p)
      contacts->self.push_back({static_cast<int>(p), b, o.friction, contacts->points[p].radius_m});
    // The puppet's capsules' middles against it (the rows' ends are the points' rows above).
    for (int c = 0; c < b; ++c)
      if (segmentRowFor(contacts->bodies, c, b)) {
        SelfContact row{-1, b, o.friction, contacts->bodies[c].radius_m};
        row.segment = c;
        contacts->self.push_back(row);
      }
  }
  if (contacts->rows() == 0) return nullptr;
  return contacts;
}

}  // namespace marionette
