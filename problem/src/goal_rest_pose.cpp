// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/problem/goal_rest_pose.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>

#include "marionette/models/rest_pose.hpp"

namespace marionette {

// A rest pose of rho that is collision-free, or nullopt.
std::optional<RestVertex> restVertex(const ModelPtr& model, CollisionChecker& checker,
                                                  const Eigen::VectorXd& rho,
                                                  const Eigen::VectorXd* guess) {
  const RestPose rest = computeRestPose(model, rho, guess);
  if (!rest.ok) return std::nullopt;
  if (checker.inCollision(model->configuration(rest.q, rho)).in_collision) return std::nullopt;
  return RestVertex{rho, rest.q};
}

// A collision-free rest pose whose goal error is at most `aim`, by damped Gauss-Newton
// (Levenberg-Marquardt) on the inputs from the rest vertex `from`.  The rest pose is followed by
// continuation: warm-started Newton solves that keep the taut strings taut (unless a tension
// goes negative), so the Jacobian d r(q*(rho), rho) / d rho comes from finite differences of
// the same branch of equilibria.  Inputs are scaled by their ranges and kept inside them.  The
// answer is confirmed by a full rest-pose solve (damped settling, then Newton) from it, which
// stays put only at a stable equilibrium.  nullopt if the error stops falling first (a
// collision, a joint stop, an unreachable target) or when `in_time` says stop.
std::optional<RestVertex> descendToGoal(const ModelPtr& model_ptr,
                                                     CollisionChecker& checker, GoalEvaluator& goal,
                                                     const RestVertex& from,
                                                     double aim,
                                                     const std::function<bool()>& in_time) {
  const Model& model = *model_ptr;
  const int nk = model.nk();
  Eigen::VectorXd lower(nk), range(nk);
  for (int i = 0; i < nk; ++i) {
    lower[i] = model.kinematic[i].lower;
    range[i] = model.kinematic[i].upper - model.kinematic[i].lower;
  }
  RestPoseOptions continuation;
  continuation.max_settle_steps = 0;
  RestPose cur = computeRestPose(model_ptr, from.rho, &from.q, continuation);  // its taut set
  if (!cur.ok) return std::nullopt;
  Eigen::VectorXd cur_rho = from.rho;
  Eigen::VectorXd r = goal.poseResidual(cur.q, cur_rho);
  double err = goal.poseError(cur.q, cur_rho);
  double damping = 1e-3;  // relative to the largest diagonal entry of J J^T
  Eigen::MatrixXd J(r.size(), nk);
  for (int iteration = 0; iteration < 20 && err > aim && in_time(); ++iteration) {
    continuation.continue_from = &cur;
    for (int i = 0; i < nk; ++i) {
      const double h = cur_rho[i] + 1e-5 * range[i] > lower[i] + range[i] ? -1e-5 : 1e-5;
      Eigen::VectorXd rho = cur_rho;
      rho[i] += h * range[i];
      const RestPose rest = computeRestPose(model_ptr, rho, &cur.q, continuation);
      if (rest.ok)
        J.col(i) = (goal.poseResidual(rest.q, rho) - r) / h;
      else
        J.col(i).setZero();
    }
    const Eigen::MatrixXd JJt = J * J.transpose();
    const double scale = std::max(JJt.diagonal().maxCoeff(), 1e-12);
    bool improved = false;
    while (!improved && damping < 1e2 && in_time()) {
      Eigen::MatrixXd A = JJt;
      A.diagonal().array() += damping * scale;
      Eigen::VectorXd dx = J.transpose() * A.ldlt().solve(-r);
      const double big = dx.cwiseAbs().maxCoeff();
      if (big > 0.1) dx *= 0.1 / big;  // trust region: a tenth of any range per iteration
      const Eigen::VectorXd rho =
          (cur_rho + dx.cwiseProduct(range)).cwiseMax(lower).cwiseMin(lower + range);
      RestPose next = computeRestPose(model_ptr, rho, &cur.q, continuation);
      const double e = next.ok ? goal.poseError(next.q, rho) : err;
      if (e < err && !checker.inCollision(model.configuration(next.q, rho)).in_collision) {
        cur = std::move(next);
        cur_rho = rho;
        err = e;
        r = goal.poseResidual(cur.q, cur_rho);
        damping = std::max(1e-6, damping / 4);
        improved = true;
      } else {
        damping *= 8;
      }
    }
    if (!improved) break;
  }
  if (err > aim) return std::nullopt;
  auto v = restVertex(model_ptr, checker, cur_rho, &cur.q);
  if (!v || goal.poseError(v->q, v->rho) > aim) return std::nullopt;
  return v;
}

// The same by a local random search (for when Gauss-Newton stalls): Gaussian steps on the
// inputs, kept when the rest pose gets nearer to the goal, narrowed when it does not.
std::optional<RestVertex> randomDescent(const ModelPtr& model_ptr,
                                                     CollisionChecker& checker, GoalEvaluator& goal,
                                                     RestVertex cur, double aim,
                                                     std::mt19937_64& rng,
                                                     const std::function<bool()>& in_time) {
  const Model& model = *model_ptr;
  std::normal_distribution<double> gauss(0.0, 1.0);
  double err = goal.poseError(cur.q, cur.rho), sigma = 0.25;
  for (int it = 0; it < 60 && err > aim && in_time(); ++it) {
    Eigen::VectorXd rho = cur.rho;
    for (int i = 0; i < model.nk(); ++i) {
      const auto& kv = model.kinematic[i];
      rho[i] =
          std::clamp(rho[i] + sigma * (kv.upper - kv.lower) * gauss(rng) / 4.0, kv.lower, kv.upper);
    }
    auto v = restVertex(model_ptr, checker, rho, &cur.q);
    if (!v) continue;
    const double e = goal.poseError(v->q, v->rho);
    if (e < err) {
      cur = *v;
      err = e;
    } else {
      sigma = std::max(0.02, sigma * 0.9);
    }
  }
  if (err <= aim) return cur;
  return std::nullopt;
}

}  // namespace marionette
