// SPDX-License-Identifier: BSD-3-Clause
// Where a model's named points hang at rest at its default inputs (stage coordinates): the
// reference of keyframe offsets, retargeted clips and Egger's body height z_body.
#pragma once

#include <Eigen/Core>

#include "marionette/models/model.hpp"

namespace marionette::detail {

struct RestPoints {
  Eigen::Matrix3Xd points_m;         // 3 x n_points, Model::points order
  Eigen::Matrix3Xd frame_origins_m;  // 3 x n_frames, Model::frames order
  Eigen::VectorXd q;                 // the rest pose (n_d)
};
// Throws std::runtime_error when the model has no rest pose at its defaults.
RestPoints restPoints(const ModelPtr& model);

}  // namespace marionette::detail
