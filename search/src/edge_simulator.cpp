// SPDX-License-Identifier: BSD-3-Clause
#include "edge_simulator.hpp"

#include <cmath>

#include "marionette/models/cancel.hpp"
#include "marionette/models/rest_pose.hpp"

namespace marionette::roadmap {

EdgeSimulator::EdgeSimulator(const CollisionModelPtr& collision, const RoadmapOptions& options)
    : model_ptr_(collision->modelPtr()),
      model_(*model_ptr_),
      opt_(options),
      vi_(model_ptr_,
          [&] {
            IntegratorOptions o;
            o.dt_s = options.step_s;
            o.contacts = collision->contacts();
            return o;
          }()),
      checker_(collision),
      data_(model_),
      qa_full_(model_.nq()),
      q_full_(model_.nq()) {}

double EdgeSimulator::pointDisplacement(const Eigen::VectorXd& q_a, const Eigen::VectorXd& q_b,
                                        const Eigen::VectorXd& rho) {
  qa_full_ << q_a, rho;
  forwardKinematics(model_, data_, qa_full_);
  points_a_.resize(model_.points.size());
  for (std::size_t i = 0; i < model_.points.size(); ++i)
    points_a_[i] = pointPosition(data_, model_.points[i].frame, model_.points[i].position_m);
  qa_full_ << q_b, rho;
  forwardKinematics(model_, data_, qa_full_);
  double d = 0.0;
  for (std::size_t i = 0; i < model_.points.size(); ++i)
    d = std::max(d, (pointPosition(data_, model_.points[i].frame, model_.points[i].position_m) -
                     points_a_[i])
                        .norm());
  return d;
}

bool EdgeSimulator::still(const State& x) {
  q_full_ << x.q, x.rho;
  return kineticEnergyFromMomentum(model_, data_, q_full_, x.p, opt_.step_s) <=
         opt_.settle_energy_J;
}

bool EdgeSimulator::settledNear(const State& x, const Eigen::VectorXd& q_rest) {
  return pointDisplacement(x.q, q_rest, x.rho) <= opt_.settle_tolerance && still(x);
}

int EdgeSimulator::holdSteps(double factor) const {
  return static_cast<int>(std::ceil(factor * opt_.settle_max_s / opt_.step_s));
}

bool EdgeSimulator::stepChecked(State& x, const Eigen::VectorXd& rho, EdgeCheck& out) {
  // (A step that converges at once never polls inside the integrator: an edge of minutes would
  // hold its caller past a deadline.)
  if ((out.propagations & 255) == 0) throwIfCancelled("roadmap edge");
  ++out.propagations;
  if (vi_.step(x, rho, x) != StepStatus::Ok) return false;
  q_full_ << x.q, x.rho;
  ++out.collision_checks;
  return !checker_.inCollision(q_full_).in_collision;
}

bool EdgeSimulator::move(const Eigen::VectorXd& rho_a, const Eigen::VectorXd& q_a,
                         const Eigen::VectorXd& rho_b, State& x, EdgeCheck& out) {
  RigTrajectory traj(opt_.step_s, rho_a);
  appendMove(model_, traj, rho_b, opt_.slowdown);
  x = vi_.stateFromVelocity(q_a, Eigen::VectorXd::Zero(model_.nd()), rho_a);
  for (int k = 1; k < traj.knots(); ++k)
    if (!stepChecked(x, traj.position.row(k).transpose(), out)) return false;
  return true;
}

EdgeCheck EdgeSimulator::check(const Eigen::VectorXd& rho_a, const Eigen::VectorXd& q_a,
                               const Eigen::VectorXd& rho_b, const Eigen::VectorXd& q_b) {
  EdgeCheck out;
  State x;
  if (!move(rho_a, q_a, rho_b, x, out)) return out;
  const int max_hold = holdSteps(kEdgeHold);
  for (int k = 0; k <= max_hold; ++k) {
    if (k > 0 && !stepChecked(x, rho_b, out)) return out;
    if (settledNear(x, q_b)) {
      out.ok = true;
      out.settle_s = k * opt_.step_s;
      return out;
    }
  }
  return out;
}

bool EdgeSimulator::assemble(const Eigen::VectorXd& q0, const Eigen::VectorXd& qdot0,
                             RigTrajectory& traj,
                             const std::vector<RestPoseRoadmap::Vertex>& targets,
                             GoalEvaluator* final_goal, long& propagations) {
  const Eigen::VectorXd rho0 = traj.position.row(0).transpose();
  State x = vi_.stateFromVelocity(q0, qdot0, rho0);
  Eigen::VectorXd u(model_.nk());
  auto advanceFrom = [&](int first) {  // simulate knots first .. last
    for (int k = first; k < traj.knots(); ++k) {
      u = traj.position.row(k).transpose();
      ++propagations;
      if (vi_.step(x, u, x) != StepStatus::Ok) return false;
    }
    return true;
  };
  int done = 0;  // knots simulated so far
  bool settled_all = true;
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model_.nk());
  for (std::size_t t = 0; t < targets.size(); ++t) {
    if (t > 0) appendMove(model_, traj, targets[t].rho, opt_.slowdown);
    if (!advanceFrom(done + 1)) return false;
    done = traj.knots() - 1;
    // The last hold also waits for the goal itself (its tolerance may be tighter).
    GoalEvaluator* goal = t + 1 == targets.size() ? final_goal : nullptr;
    const int max_hold = holdSteps(kPathHold);
    for (int k = 0;; ++k) {
      if (settledNear(x, targets[t].q) &&
          (!goal || goal->measureFromMomentum(x.q, x.rho, x.p, zero, opt_.step_s).satisfied))
        break;
      if (k == max_hold) {
        settled_all = false;
        break;
      }
      traj.append(targets[t].rho, zero);
      ++propagations;
      ++done;
      if (vi_.step(x, targets[t].rho, x) != StepStatus::Ok) return false;
    }
  }
  return settled_all;
}

std::optional<std::pair<RestPoseRoadmap::Vertex, EdgeCheck>> EdgeSimulator::reach(
    const Eigen::VectorXd& rho_a, const Eigen::VectorXd& q_a, const Eigen::VectorXd& rho_b) {
  EdgeCheck out;
  State x;
  if (!move(rho_a, q_a, rho_b, x, out)) return std::nullopt;
  const int max_hold = holdSteps(kEdgeHold);
  int next_try = 0;
  for (int k = 0; k <= max_hold; ++k) {
    if (k > 0 && !stepChecked(x, rho_b, out)) return std::nullopt;
    if (k < next_try || !still(x)) continue;
    const RestPose rest =
        computeRestPose(model_ptr_, rho_b, &x.q);
    if (rest.ok && settledNear(x, rest.q)) {
      if (checker_.inCollision(model_.configuration(rest.q, rho_b)).in_collision)
        return std::nullopt;
      out.ok = true;
      out.settle_s = k * opt_.step_s;
      return std::make_pair(RestPoseRoadmap::Vertex{rho_b, rest.q}, out);
    }
    next_try = k + static_cast<int>(std::ceil(0.25 / opt_.step_s));  // look again in 0.25 s
  }
  return std::nullopt;
}

double EdgeSimulator::settle(const Eigen::VectorXd& q, const Eigen::VectorXd& qdot,
                             const Eigen::VectorXd& rho, const Eigen::VectorXd& q_rest,
                             long& propagations) {
  State x = vi_.stateFromVelocity(q, qdot, rho);
  const int max_hold = holdSteps(kStartHold);
  for (int k = 0; k <= max_hold; ++k) {
    if (k > 0) {
      ++propagations;
      if (vi_.step(x, rho, x) != StepStatus::Ok) return -1.0;
    }
    if (settledNear(x, q_rest)) return k * opt_.step_s;
  }
  return -1.0;
}

}  // namespace marionette::roadmap
