// SPDX-License-Identifier: BSD-3-Clause
// Internal to the roadmap: simulating its edges.  An edge moves the rig's inputs from one rest
// pose's values to another's (the quintic move of rig_trajectory.hpp), with the real dynamics
// and a collision check after every step, then holds them until the swing settles near the
// target rest pose.  One per thread (it owns an integrator and a collision checker).
#pragma once

#include <Eigen/Core>
#include <optional>
#include <utility>
#include <vector>

#include "marionette/environments/collision.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/models/rig_trajectory.hpp"
#include "marionette/search/roadmap.hpp"

namespace marionette::roadmap {

// What simulating one edge found.
struct EdgeCheck {
  bool ok = false;
  double settle_s = 0.0;
  long propagations = 0, collision_checks = 0;
};

class EdgeSimulator {
 public:
  // How long a hold may wait for the swing to settle, in settle_max_s: an edge (and a learning
  // move), a hold along an assembled path (it carries the swing of what came before), and the
  // start's settling.
  static constexpr double kEdgeHold = 1.0, kPathHold = 2.0, kStartHold = 4.0;

  EdgeSimulator(const CollisionModelPtr& collision, const RoadmapOptions& options);

  // The largest distance (m) between the same named point of the puppet at q_a and at q_b (n_d
  // each, inputs rho): how far apart two poses look, whatever joints (and whole turns) differ.
  double pointDisplacement(const Eigen::VectorXd& q_a, const Eigen::VectorXd& q_b,
                           const Eigen::VectorXd& rho);

  // Settled: every named point within settle_tolerance of where it is at the rest pose q_rest
  // (n_d), and the puppet's kinetic energy below settle_energy_J.
  bool settledNear(const State& x, const Eigen::VectorXd& q_rest);
  // Still: the kinetic energy alone below settle_energy_J.
  bool still(const State& x);

  // From rest at (rho_a, q_a): move to rho_b, then hold until settled near q_b.
  EdgeCheck check(const Eigen::VectorXd& rho_a, const Eigen::VectorXd& q_a,
                  const Eigen::VectorXd& rho_b, const Eigen::VectorXd& q_b);

  // The path as one continuous motion from the start state: each move, then a hold until the
  // swing -- carried over from what came before -- has settled near the edge's target rest
  // pose (the edge checks start from exact rest; this is what actually happens).  Appends to
  // `traj`; returns false if some hold does not settle within kPathHold settle_max_s.
  bool assemble(const Eigen::VectorXd& q0, const Eigen::VectorXd& qdot0, RigTrajectory& traj,
                const std::vector<RestPoseRoadmap::Vertex>& targets, GoalEvaluator* final_goal,
                long& propagations);

  // The learning phase's edge: from rest at (rho_a, q_a), move to rho_b and hold until the
  // puppet comes to rest -- wherever the dynamics take it.  The rest pose reached (polished to
  // an exact equilibrium) becomes the new vertex, so vertices are equilibria the puppet actually
  // settles into from the roadmap, not just any equilibrium of their inputs (puppets with slack
  // strings have several).  nullopt on a collision or if it does not settle.
  std::optional<std::pair<RestPoseRoadmap::Vertex, EdgeCheck>> reach(const Eigen::VectorXd& rho_a,
                                                                     const Eigen::VectorXd& q_a,
                                                                     const Eigen::VectorXd& rho_b);

  // Holds rho from (q, qdot) until settled near q_rest; returns the hold time, or -1 if it does
  // not settle within kStartHold settle_max_s.
  double settle(const Eigen::VectorXd& q, const Eigen::VectorXd& qdot, const Eigen::VectorXd& rho,
                const Eigen::VectorXd& q_rest, long& propagations);

 private:
  // One step to the inputs rho, then the collision check; false on a failed step or a contact.
  bool stepChecked(State& x, const Eigen::VectorXd& rho, EdgeCheck& out);
  // From rest at (rho_a, q_a), the quintic move to rho_b, every step checked; x is the state at
  // its end.  False on a failed step or a contact.
  bool move(const Eigen::VectorXd& rho_a, const Eigen::VectorXd& q_a, const Eigen::VectorXd& rho_b,
            State& x, EdgeCheck& out);
  // Steps within settle_max_s (times `factor`) at step_s.
  int holdSteps(double factor) const;

  ModelPtr model_ptr_;
  const Model& model_;
  RoadmapOptions opt_;
  VariationalIntegrator vi_;
  CollisionChecker checker_;
  DynamicsData data_;
  Eigen::VectorXd qa_full_, q_full_;
  std::vector<Eigen::Vector3d> points_a_;
};

}  // namespace marionette::roadmap
