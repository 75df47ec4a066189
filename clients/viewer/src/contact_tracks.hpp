// SPDX-License-Identifier: BSD-3-Clause
// Internal: where the contacts a motion says bore load touch, as the view draws them.  Each pair
// ("SURFACE/POINT", "BODY/POINT": Contacts::rowName of the model's contacts on the scene) at
// every sample: the point of contact on the point's sphere and the direction the normal force
// pushes it (out of the surface, or out of the body's core), in stage coordinates.
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "marionette/environments/scene.hpp"

namespace marionette::viewer {

struct ContactTracks {
  std::vector<Eigen::MatrixXd> at_m;  // per pair: N x 3, the point of contact
  std::vector<Eigen::MatrixXd> push;  // per pair: N x 3, a unit vector
};

// q: N x n_q.  scene may be null (the links touching one another only).  Throws ViewError naming
// a pair the model on this scene does not have.
ContactTracks contactTracks(const ModelPtr& model, const ScenePtr& scene,
                            const std::vector<std::string>& names, const Eigen::MatrixXd& q);

}  // namespace marionette::viewer
