// SPDX-License-Identifier: BSD-3-Clause
// The surfaces of a scene the puppet may touch (Obstacle::contact: the floor, by default), as the
// integrator's contacts (models/contact.hpp): each such plane in the model's world frame with its
// friction, against every contact point of the model; and the puppet's own links.
#pragma once

#include <Eigen/Geometry>
#include <memory>
#include <optional>

#include "marionette/environments/scene.hpp"
#include "marionette/models/contact.hpp"

namespace marionette {

// The contacts of `model` hanging in `scene` at `stage_pose` (default: model.stage_pose): one
// ContactSurface per obstacle with contact true (named as the obstacle; a plane's normal made a
// unit vector, its offset with it), the points contactPoints(model), and the links touching one
// another (addSelfContacts: the model's contacts: section).  Null when nothing may touch.
std::shared_ptr<const Contacts> sceneContacts(
    const Model& model, const Scene& scene,
    const std::optional<Eigen::Isometry3d>& stage_pose = std::nullopt);

}  // namespace marionette
