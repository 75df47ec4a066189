// SPDX-License-Identifier: BSD-3-Clause
#include "quasi_static.hpp"

#include "marionette/common/text.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette::detail {

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
    if (r == 0) {
      rest = computeRestPose(model, rho, &start_q);
    } else {
      // Continuation from the row before (a Newton solve from its taut set); when the taut set
      // changes too much for that, the damped settling from its pose.
      RestPoseOptions continued;
      continued.max_settle_steps = 0;
      continued.continue_from = &previous;
      rest = computeRestPose(model, rho, &previous.q, continued);
      if (!rest.ok) rest = computeRestPose(model, rho, &previous.q);
    }
    if (!rest.ok) {
      out.message = "no rest pose at row " + std::to_string(r) + ": " + rest.message;
      return out;
    }
    if (r > 0) {
      const double step = (rest.q - previous.q).cwiseAbs().maxCoeff();
      if (step > max_step) {
        out.message =
            "the rest pose jumps by " + formatNumber(step) + " at row " + std::to_string(r);
        return out;
      }
    }
    out.q.row(r) = rest.q.transpose();
    out.tension_N.row(r) = rest.tension_N.transpose();
    previous = std::move(rest);
  }
  out.ok = true;
  return out;
}

}  // namespace marionette::detail
