// SPDX-License-Identifier: BSD-3-Clause
// The whole puppet in a performance's objective (PerformanceOptions::calm_weight): the named
// points without a target are held calm -- near where they hang in the kinematic step, near
// where the kinematic step's rest poses put them in the dynamics step -- so that limbs nobody
// asked to move follow the targeted ones as a slowly moved puppet's would instead of flailing.
//
// Contents
//   calmPoints        which points are held
//   restPointMotion   where the rest poses of a motion's inputs put them
//   holdCalm          the dynamics step's targets for them
#pragma once

#include <Eigen/Core>
#include <memory>
#include <string>
#include <vector>

#include "marionette/models/contact.hpp"
#include "marionette/models/model.hpp"
#include "marionette/trajopt/horizon_tracking.hpp"

namespace marionette::detail {

// Every named point of the puppet (model point indices; a point the rig's inputs alone carry is
// the rig's) but the targeted ones, those set free, and those that move with a target: on a
// targeted point's chain (an elbow under its hand's target, the body a head hangs from) or
// carried by a targeted joint.
std::vector<int> calmPoints(const Model& model, const std::vector<std::string>& targeted_points,
                            const std::vector<std::string>& targeted_variables,
                            const std::vector<std::string>& free_points);

// The positions of `points` (model point indices) in the rest pose of each row of `inputs`
// (S rows of n_k): S rows of 3 per point, in the model's world frame (as the transcription's
// targets).  Each rest pose by continuation from the row before's (the first from `start_q`),
// settled from it where its taut set changes too much for that, standing on `contacts` (may be
// null); a row with no rest pose is NaN (no target there) and the next continues from the last
// one found.
Eigen::MatrixXd restPointMotion(const ModelPtr& model, const Eigen::MatrixXd& inputs,
                                const std::vector<int>& points, const Eigen::VectorXd& start_q,
                                std::shared_ptr<const Contacts> contacts);

// `points` followed to `reference` (restPointMotion's) in the windows with `weight` of a
// target's, after the setup's targets (which keep weight 1).
void holdCalm(HorizonTracking& setup, const std::vector<int>& points, double weight,
              const Eigen::MatrixXd& reference);

}  // namespace marionette::detail
