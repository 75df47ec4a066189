// SPDX-License-Identifier: BSD-3-Clause
// The obstacles of a scene the puppet may touch (Obstacle::contact: the floor, by default), as
// the integrator's contacts (models/contact.hpp): each such plane, sphere, capsule or box in the
// model's world frame with its friction, against every contact point of the model; and the
// puppet's own links.
#pragma once

#include <Eigen/Geometry>
#include <memory>
#include <optional>

#include "marionette/environments/scene.hpp"
#include "marionette/models/contact.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// The contacts of `model` hanging in `scene` at `stage_pose` (default: model.stage_pose): the
// points contactPoints(model); one ContactSurface per plane with contact true (named as the
// obstacle; its normal made a unit vector, its offset with it); the links touching one another
// (addSelfContacts: the model's contacts: section); then one body on kStageFrame per sphere,
// capsule or box with contact true (named as the obstacle), each touched by every point with
// the obstacle's friction.  Null when nothing may touch.  More than kMaxSelfContacts
// point-body rows: FieldError "obstacles[I].contact".
std::shared_ptr<const Contacts> sceneContacts(
    const Model& model, const Scene& scene,
    const std::optional<Eigen::Isometry3d>& stage_pose = std::nullopt);

}  // namespace marionette

#pragma GCC visibility pop
