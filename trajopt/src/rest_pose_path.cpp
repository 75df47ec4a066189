// SPDX-License-Identifier: BSD-3-Clause
#include "rest_pose_path.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

#include "marionette/models/cancel.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/models/rig_trajectory.hpp"
#include "quasi_static.hpp"

namespace marionette::detail {
namespace {

// Each input's range (m or rad), the unit of the tree's distances; 1 for an unbounded input.
Eigen::VectorXd inputRanges(const Model& model) {
  Eigen::VectorXd range(model.nk());
  for (int j = 0; j < model.nk(); ++j) {
    const KinematicVariable& v = model.kinematic[j];
    const double width = v.upper - v.lower;
    range[j] = std::isfinite(width) && width > 0 ? width : 1.0;
  }
  return range;
}

// A uniform number in [0, 1) from the generator's raw bits (portable, unlike the standard's
// distributions).
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

struct TreeVertex {
  RestVertex rest;
  RestPose pose;  // the continuation's state at it
  int parent;
};

// The straight move from `from` to `to` in sub-steps of setup.resolution of each range: the rest
// pose continued along it, each clear with margin.  The last rest pose when every one is, else
// none.
std::optional<RestPose> edgeEnd(const RestPosePathSetup& setup, CollisionChecker& checker,
                                const RestPose& from, const Eigen::VectorXd& from_rho,
                                const Eigen::VectorXd& to, const Eigen::VectorXd& range,
                                long& rest_poses) {
  const ModelPtr model = setup.collision->modelPtr();
  const double span = ((to - from_rho).cwiseAbs().array() / range.array()).maxCoeff();
  const int steps = std::max(1, static_cast<int>(std::ceil(span / setup.resolution)));
  RestPose at = from;
  Eigen::VectorXd rho = from_rho;
  Eigen::VectorXd q_full(model->nq());
  for (int i = 1; i <= steps; ++i) {
    throwIfCancelled("plan optimization");
    const Eigen::VectorXd next = from_rho + (to - from_rho) * (static_cast<double>(i) / steps);
    // (Continuation alone: settling where the taut set changes costs tens of times more, and
    // the tree finds as many vertices without it.)
    RestPose rest = continuedRestPose(model, at, rho, next, setup.max_step, nullptr, false);
    ++rest_poses;
    if (!rest.ok) return std::nullopt;
    q_full << rest.q, next;
    const StateCheck c = checker.checkState(q_full);
    if (c.in_collision || c.stage_clearance_m < setup.stage_margin_m ||
        c.clearance_m < setup.margin_m)
      return std::nullopt;
    at = std::move(rest);
    rho = next;
  }
  return at;
}

}  // namespace

RestPosePath searchRestPosePath(const RestPosePathSetup& setup, const RestVertex& start,
                                const Eigen::VectorXd& goal_inputs, GoalEvaluator& goal,
                                double aim) {
  RestPosePath out;
  const ModelPtr model = setup.collision->modelPtr();
  const Eigen::VectorXd range = inputRanges(*model);
  CollisionChecker checker(setup.collision);
  std::mt19937_64 rng(setup.seed);
  const RestPose root = computeRestPose(model, start.rho, &start.q);
  ++out.rest_poses;
  if (!root.ok) {
    out.message = "no rest pose at the start's inputs: " + root.message;
    return out;
  }
  std::vector<TreeVertex> tree = {{{start.rho, root.q}, root, -1}};
  auto distance = [&](const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
    return ((a - b).array() / range.array()).matrix().norm();
  };
  auto meets = [&](const TreeVertex& v) { return goal.poseError(v.rest.q, v.rest.rho) <= aim; };
  auto pathTo = [&](int v) {
    std::vector<int> chain;
    for (; v >= 0; v = tree[v].parent) chain.push_back(v);
    std::reverse(chain.begin(), chain.end());
    return chain;
  };
  // Adds the end of a clear edge from vertex `v` to `to`; its index, or -1.
  auto grow = [&](int v, const Eigen::VectorXd& to) {
    std::optional<RestPose> end =
        edgeEnd(setup, checker, tree[v].pose, tree[v].rest.rho, to, range, out.rest_poses);
    if (!end) return -1;
    tree.push_back({{to, end->q}, std::move(*end), v});
    return static_cast<int>(tree.size()) - 1;
  };

  // Straight to the goal's inputs first: where that passes, the path is the transfer.
  int reached = meets(tree[0]) ? 0 : -1;
  if (reached < 0) {
    const int direct = grow(0, goal_inputs);
    if (direct >= 0 && meets(tree[direct])) reached = direct;
  }
  // Then one input at a time, each the first (in order) whose move alone passes, then straight
  // on: a fold is often where two inputs' moves meet (a limb lifted while its other string
  // lengthens).
  const auto within_budget = [&] { return out.rest_poses < setup.max_rest_poses; };
  for (int v = 0; reached < 0 && v >= 0 && within_budget();) {
    int moved = -1;
    for (int j = 0; j < model->nk() && moved < 0 && within_budget(); ++j) {
      if (tree[v].rest.rho[j] == goal_inputs[j]) continue;
      Eigen::VectorXd to = tree[v].rest.rho;
      to[j] = goal_inputs[j];
      moved = grow(v, to);
    }
    if (moved >= 0 && meets(tree[moved])) reached = moved;
    if (moved >= 0 && reached < 0) {
      const int direct = grow(moved, goal_inputs);
      if (direct >= 0 && meets(tree[direct])) reached = direct;
    }
    v = moved;
  }
  // (Every sample solves a rest pose but one that falls on a vertex: the goal's inputs, where a
  // vertex is at them; those are bounded too.)
  for (long samples = 0; reached < 0 && within_budget() && samples < setup.max_rest_poses;
       ++samples) {
    // A sample: the goal's inputs, or uniform in the inputs' box.
    Eigen::VectorXd sample(model->nk());
    const bool towards_goal = uniform(rng) < setup.goal_bias;
    for (int j = 0; j < model->nk(); ++j) {
      const KinematicVariable& v = model->kinematic[j];
      const double lo = std::isfinite(v.lower) ? v.lower : start.rho[j] - 0.5 * range[j];
      sample[j] = towards_goal ? goal_inputs[j] : lo + range[j] * uniform(rng);
    }
    int nearest = 0;
    for (int v = 1; v < static_cast<int>(tree.size()); ++v)
      if (distance(tree[v].rest.rho, sample) < distance(tree[nearest].rest.rho, sample))
        nearest = v;
    const double d = distance(tree[nearest].rest.rho, sample);
    if (!(d > 0)) continue;
    const Eigen::VectorXd& from = tree[nearest].rest.rho;
    const Eigen::VectorXd to =
        d <= setup.extend ? sample : Eigen::VectorXd(from + (sample - from) * (setup.extend / d));
    const int added = grow(nearest, to);
    if (added < 0) continue;
    if (meets(tree[added])) {
      reached = added;
      break;
    }
    // Then straight on to the goal's inputs, where the rest pose may meet the goal.
    const int connected = grow(added, goal_inputs);
    if (connected >= 0 && meets(tree[connected])) reached = connected;
  }
  if (reached < 0) {
    out.message = "no path of clear rest poses to the goal within " +
                  std::to_string(setup.max_rest_poses) + " rest poses (" +
                  std::to_string(tree.size()) + " found)";
    return out;
  }

  // Shortcut: from each kept waypoint, straight to the farthest later one that an edge reaches
  // on the same branch (its rest pose within one fold step of the tree's), while the budget lasts.
  const std::vector<int> chain = pathTo(reached);
  std::vector<int> kept = {chain.front()};
  RestPose at = tree[chain.front()].pose;
  for (std::size_t i = 0; i + 1 < chain.size();) {
    std::size_t next = i + 1;
    RestPose next_pose = tree[chain[next]].pose;
    for (std::size_t j = chain.size() - 1; j > i + 1 && out.rest_poses < 2 * setup.max_rest_poses;
         --j) {
      std::optional<RestPose> end = edgeEnd(setup, checker, at, tree[kept.back()].rest.rho,
                                            tree[chain[j]].rest.rho, range, out.rest_poses);
      if (end && (end->q - tree[chain[j]].pose.q).cwiseAbs().maxCoeff() <= setup.max_step) {
        next = j;
        next_pose = std::move(*end);
        break;
      }
    }
    kept.push_back(chain[next]);
    at = std::move(next_pose);
    i = next;
  }
  for (int v : kept) {
    out.inputs.push_back(tree[v].rest.rho);
    out.poses.push_back(tree[v].rest.q);
  }
  return out;
}

Eigen::MatrixXd restPoseMotion(const Model& model, const RestPosePath& path, double rate_hz,
                               double slowdown) {
  const double dt_s = 1.0 / rate_hz;
  RigTrajectory motion(dt_s, path.inputs.front());
  for (std::size_t i = 1; i < path.inputs.size(); ++i)
    appendMove(model, motion, path.inputs[i], slowdown);
  return motion.resample(rate_hz);
}

}  // namespace marionette::detail
