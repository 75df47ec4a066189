// SPDX-License-Identifier: BSD-3-Clause
#include "quasi_static.hpp"

#include "marionette/common/text.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette::detail {
namespace {

constexpr int kSubsteps = 8;

// The rest pose at `rho` by continuation from `previous` (a Newton solve from its taut set); when
// the taut set changes too much for that, the damped settling from its pose if `settle`.
RestPose continued(const ModelPtr& model, const RestPose& previous, const Eigen::VectorXd& rho,
                   bool settle) {
  RestPoseOptions options;
  options.max_settle_steps = 0;
  options.continue_from = &previous;
  RestPose rest = computeRestPose(model, rho, &previous.q, options);
  if (!rest.ok && settle) rest = computeRestPose(model, rho, &previous.q);
  return rest;
}

}  // namespace

RestPose continuedRestPose(const ModelPtr& model, const RestPose& previous,
                           const Eigen::VectorXd& rho_before, const Eigen::VectorXd& rho,
                           double max_step, std::string* why, bool settle) {
  RestPose rest = continued(model, previous, rho, settle);
  // A step larger than max_step is either a steep stretch of a continuous path (a limb that
  // turns fast for a small move of the rig: each of kSubsteps sub-steps then moves it a
  // fraction as much) or a jump (it stays in one sub-step).
  double step = rest.ok ? (rest.q - previous.q).cwiseAbs().maxCoeff() : 0.0;
  if (rest.ok && step > max_step) {
    RestPose sub = previous;
    step = 0.0;
    for (int i = 1; i <= kSubsteps && sub.ok; ++i) {
      RestPose next =
          continued(model, sub, rho_before + (rho - rho_before) * i / kSubsteps, settle);
      if (next.ok) step = std::max(step, (next.q - sub.q).cwiseAbs().maxCoeff());
      sub = std::move(next);
    }
    rest = std::move(sub);
  }
  if (rest.ok && step > max_step) {
    rest.ok = false;
    if (why) *why = "the rest pose jumps by " + formatNumber(step);
  } else if (!rest.ok && why) {
    *why = "no rest pose: " + rest.message;
  }
  return rest;
}

QuasiStaticPath quasiStaticPath(const ModelPtr& model, const Eigen::MatrixXd& inputs,
                                const Eigen::VectorXd& start_q, double max_step) {
  QuasiStaticPath out;
  const Eigen::Index rows = inputs.rows();
  out.q.resize(rows, model->nd());
  out.tension_N.resize(rows, model->nstrings());
  RestPose previous;
  for (Eigen::Index r = 0; r < rows; ++r) {
    const Eigen::VectorXd rho = inputs.row(r).transpose();
    RestPose rest;
    std::string why;
    if (r == 0) {
      rest = computeRestPose(model, rho, &start_q);
      if (!rest.ok) why = "no rest pose: " + rest.message;
    } else {
      rest = continuedRestPose(model, previous, inputs.row(r - 1).transpose(), rho, max_step,
                               &why);
    }
    if (!rest.ok) {
      out.message = why + " at row " + std::to_string(r);
      return out;
    }
    out.q.row(r) = rest.q.transpose();
    out.tension_N.row(r) = rest.tension_N.transpose();
    previous = std::move(rest);
  }
  out.ok = true;
  return out;
}

}  // namespace marionette::detail
