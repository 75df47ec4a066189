// SPDX-License-Identifier: BSD-3-Clause
// A motion slow enough to be quasi-static: at every row of an input path, the puppet hangs in the
// rest pose of those inputs (models/rest_pose.hpp, by continuation from the row before), its
// strings at their static tensions.  A stage-worthy motion is close to one -- no swing, no catch
// -- so it is where the transcription starts when it can: its only DEL residual is the motion's
// inertia.  A path along which the rest pose jumps (a string's going slack or taut flips a limb
// to another equilibrium) is no such motion; it is refused.
//
// Contents
//   QuasiStaticPath   the rest poses and tensions along a path
//   quasiStaticPath
//   continuedRestPose   one step of it
#pragma once

#include <Eigen/Core>
#include <string>

#include "marionette/models/model.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette::detail {

struct QuasiStaticPath {
  bool ok = false;            // every row has a rest pose, none jumps
  std::string message;        // why not, when !ok
  Eigen::MatrixXd q;          // rows x n_d: the rest poses
  Eigen::MatrixXd tension_N;  // rows x n_s: their static tensions
};

// The rest poses along `inputs` (rows of n_k), the first from `start_q` (n_d); refused when two
// consecutive rest poses differ by more than max_step in any variable (rad or m) even when the
// step between their inputs is taken in eighths: a steep stretch of a continuous path (a limb
// that turns fast for a small move of the rig) is kept, a jump is not.
QuasiStaticPath quasiStaticPath(const ModelPtr& model, const Eigen::MatrixXd& inputs,
                                const Eigen::VectorXd& start_q, double max_step);

// The rest pose at `rho` by continuation from `previous` (the rest pose at `rho_before`), not ok
// when there is none or it jumps (the test above); `why` then says which.  Where the taut set
// changes too much for a Newton continuation, the rest pose is settled from the previous one by
// the damped simulation -- tens of times dearer -- when `settle`, else there is none.
RestPose continuedRestPose(const ModelPtr& model, const RestPose& previous,
                           const Eigen::VectorXd& rho_before, const Eigen::VectorXd& rho,
                           double max_step, std::string* why = nullptr, bool settle = true);

}  // namespace marionette::detail
