// SPDX-License-Identifier: BSD-3-Clause
// The roadmap's learning phase: sample inputs, reach their rest poses by simulated settling
// moves, keep the collision-free ones, connect nearest neighbours without checking.
#include <boost/graph/adjacency_list.hpp>
#include <random>

#include "edge_simulator.hpp"
#include "marionette/problem/goal_rest_pose.hpp"
#include "marionette/common/clock.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/rig_trajectory.hpp"
#include "roadmap_graph.hpp"

namespace marionette {

using roadmap::addEdgePair;
using roadmap::EdgeSimulator;
using roadmap::nearest;

RestPoseRoadmap::RestPoseRoadmap(CollisionModelPtr collision, RoadmapOptions options)
    : collision_(std::move(collision)),
      options_(std::move(options)),
      fingerprint_(fingerprint(*collision_, options_)),
      graph_(std::make_shared<Graph>()) {}

std::vector<RestPoseRoadmap::Edge> RestPoseRoadmap::edges() const {
  std::lock_guard<std::mutex> lock(graph_->mutex);
  std::vector<Edge> out;
  for (auto [it, end] = boost::edges(graph_->g); it != end; ++it) {
    const EdgeProps& p = graph_->g[*it];
    out.push_back({static_cast<int>(boost::source(*it, graph_->g)),
                   static_cast<int>(boost::target(*it, graph_->g)), p.move_s, p.settle_s, p.state,
                   p.from_build});
  }
  return out;
}

long RestPoseRoadmap::edgeCount() const {
  std::lock_guard<std::mutex> lock(graph_->mutex);
  return static_cast<long>(boost::num_edges(graph_->g));
}

std::shared_ptr<RestPoseRoadmap> RestPoseRoadmap::build(
    CollisionModelPtr collision, const RoadmapOptions& options,
    const std::function<void(int, double)>& progress, const CancelFn& cancelled) {
  const auto t0 = std::chrono::steady_clock::now();
  const CancelScope scope(cancelled);  // reaches the edges' simulations and rest poses
  options.check();
  std::shared_ptr<RestPoseRoadmap> rm(new RestPoseRoadmap(collision, options));
  const ModelPtr model_ptr = collision->modelPtr();
  const Model& model = *model_ptr;
  CollisionChecker checker(collision);
  std::mt19937_64 rng(options.seed);
  // The default inputs' rest pose first: the home pose, where most plans start.
  auto home = restVertex(model_ptr, checker, model.defaultInputs(), nullptr);
  if (!home)
    throw FieldError("options.planner",
                     "prm cannot build its roadmap here: the rest pose of the default inputs is "
                     "in collision (use a tree planner)");
  rm->vertices_.push_back(*home);
  EdgeSimulator sim(collision, options);
  struct CheckedEdge {
    int from, to;
    EdgeProps props;
  };
  std::vector<CheckedEdge> checked;
  const long max_attempts = 50L * options.vertices;
  auto last_report = t0;
  for (long attempt = 0;
       static_cast<int>(rm->vertices_.size()) < options.vertices && attempt < max_attempts;
       ++attempt) {
    if (cancelled && cancelled()) throw PlanCancelled("roadmap build");
    if (secondsSince(t0) > options.build_time_limit_s) break;
    // Half the samples uniform over the actuator ranges (reached from the home pose), half near
    // a vertex already kept (an eighth of each range, reached from that vertex): rest poses far
    // apart rarely connect by one settling move, so the roadmap grows outwards in reachable
    // steps as well as covering the space.  Either way the move that found the vertex is a
    // checked edge.
    Eigen::VectorXd rho(model.nk());
    const bool near = std::uniform_real_distribution<double>()(rng) < 0.5;
    const int base = near ? std::uniform_int_distribution<int>(
                                0, static_cast<int>(rm->vertices_.size()) - 1)(rng)
                          : 0;
    for (int i = 0; i < model.nk(); ++i) {
      const KinematicVariable& kv = model.kinematic[i];
      if (near)
        rho[i] =
            std::clamp(rm->vertices_[base].rho[i] +
                           (kv.upper - kv.lower) / 8.0 * std::normal_distribution<double>()(rng),
                       kv.lower, kv.upper);
      else
        rho[i] = std::uniform_real_distribution<double>(kv.lower, kv.upper)(rng);
    }
    if (auto found = sim.reach(rm->vertices_[base].rho, rm->vertices_[base].q, rho)) {
      rm->vertices_.push_back(found->first);
      EdgeProps e;
      e.move_s =
          moveDuration(model, rm->vertices_[base].rho, rho, options.step_s, options.slowdown);
      e.settle_s = found->second.settle_s;
      e.state = EdgeState::Valid;
      e.from_build = true;
      e.cost = roadmap::edgeCost(e, options);
      checked.push_back({base, static_cast<int>(rm->vertices_.size()) - 1, e});
    }
    if (progress && std::chrono::steady_clock::now() - last_report > std::chrono::seconds(1)) {
      last_report = std::chrono::steady_clock::now();
      progress(static_cast<int>(rm->vertices_.size()), secondsSince(t0));
    }
  }
  if (rm->vertices_.size() < 2)
    throw FieldError("options.planner",
                     "prm cannot build its roadmap here: fewer than two collision-free rest "
                     "poses found in " +
                         formatNumber(secondsSince(t0), 3) + " s (use a tree planner)");
  BGraph& g = rm->graph_->g;
  g = BGraph(rm->vertices_.size());
  for (const CheckedEdge& e : checked) boost::add_edge(e.from, e.to, e.props, g);
  for (int i = 0; i < static_cast<int>(rm->vertices_.size()); ++i)
    for (int j : nearest(model, rm->vertices_, rm->vertices_[i].rho, options.neighbours, i))
      addEdgePair(g, model, rm->vertices_, i, j, options);
  rm->build_time_s_ = secondsSince(t0);
  return rm;
}

}  // namespace marionette
