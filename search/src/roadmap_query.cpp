// SPDX-License-Identifier: BSD-3-Clause
// The roadmap's query phase: connect the start and the goal, A* over edge durations, simulate
// the path's unchecked edges, drop a failing one and search again (the lazy edge checks of
// Esteves, Arechavaleta & Laumond, IEEE ICMA 2005, §IV-D).
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/astar_search.hpp>
#include <random>

#include "edge_simulator.hpp"
#include "marionette/problem/goal_rest_pose.hpp"
#include "marionette/common/clock.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/rest_pose.hpp"
#include "roadmap_graph.hpp"

namespace marionette {

using roadmap::addEdgePair;
using roadmap::EdgeCheck;
using roadmap::EdgeSimulator;
using roadmap::nearest;
using roadmap::timeLowerBound;

namespace {

struct FoundGoal {};

struct GoalVisitor : boost::default_astar_visitor {
  int goal;
  explicit GoalVisitor(int g) : goal(g) {}
  template <class G>
  void examine_vertex(typename boost::graph_traits<G>::vertex_descriptor u, const G&) {
    if (static_cast<int>(u) == goal) throw FoundGoal{};
  }
};

}  // namespace

RestPoseRoadmap::QueryResult RestPoseRoadmap::query(const Eigen::VectorXd& start_q,
                                                    const Eigen::VectorXd& start_qdot,
                                                    const Eigen::VectorXd& start_rho,
                                                    GoalEvaluator& goal, double time_limit_s,
                                                    unsigned long seed, const CancelFn& cancelled,
                                                    bool earlier_verdicts) {
  const auto t0 = std::chrono::steady_clock::now();
  const CancelScope scope(cancelled);  // reaches the edges' simulations and rest poses
  const ModelPtr model_ptr = collision_->modelPtr();
  const Model& model = *model_ptr;
  const int nd = model.nd();
  QueryResult out;
  EdgeSimulator sim(collision_, options_);
  CollisionChecker checker(collision_);
  std::mt19937_64 rng(seed);
  const Eigen::VectorXd zero_d = Eigen::VectorXd::Zero(nd),
                        zero_k = Eigen::VectorXd::Zero(model.nk());
  auto timeUp = [&] {
    if (cancelled && cancelled()) throw PlanCancelled("roadmap query");
    return time_limit_s > 0 && secondsSince(t0) > time_limit_s;
  };

  // The start: its rest pose, after settling if it is not at rest.
  const RestPose start_rest =
      computeRestPose(model_ptr, start_rho, &start_q);
  if (!start_rest.ok) {
    out.message = "start: no rest pose for the start inputs: " + start_rest.message;
    return out;
  }
  double start_hold_s = 0.0;
  if ((start_rest.q - start_q).cwiseAbs().maxCoeff() > 1e-6 ||
      start_qdot.cwiseAbs().maxCoeff() > 0) {
    start_hold_s = sim.settle(start_q, start_qdot, start_rho, start_rest.q, out.propagations);
    if (start_hold_s < 0) {
      out.message = "start: the puppet does not settle at the start inputs within " +
                    formatNumber(EdgeSimulator::kStartHold * options_.settle_max_s) + " s";
      return out;
    }
  }

  // The query graph: the roadmap without its failed edges, plus the start, the goal vertices
  // made for this query, and a virtual goal node.
  // The roadmap's vertices never change after the build; its edge verdicts do, so the graph is
  // copied under the lock (the only other time this query takes it is to write verdicts back).
  std::vector<Vertex> vs = vertices_;
  BGraph g(vs.size());
  {
    std::lock_guard<std::mutex> lock(graph_->mutex);
    for (auto [it, end] = boost::edges(graph_->g); it != end; ++it) {
      EdgeProps p = graph_->g[*it];
      if (!earlier_verdicts && !p.from_build && p.state != EdgeState::Unknown) {
        p.state = EdgeState::Unknown;  // as built: a query's verdict forgotten
        p.settle_s = 0.0;
        p.cost = roadmap::edgeCost(p, options_);
      }
      if (p.state != EdgeState::Invalid)
        boost::add_edge(boost::source(*it, graph_->g), boost::target(*it, graph_->g), p, g);
    }
  }
  const int permanent = static_cast<int>(vs.size());
  const int s = static_cast<int>(vs.size());
  vs.push_back({start_rho, start_rest.q});
  boost::add_vertex(g);
  for (int j : nearest(model, vs, start_rho, 2 * options_.neighbours, s))
    addEdgePair(g, model, vs, s, j, options_);

  auto goalError = [&](const Vertex& v) { return goal.poseError(v.q, v.rho); };
  std::vector<int> goals;
  for (int i = 0; i < static_cast<int>(vs.size()); ++i)
    if (goal.measure(vs[i].q, vs[i].rho, zero_d, zero_k).satisfied) goals.push_back(i);
  auto addQueryVertex = [&](const Vertex& v) {
    const int id = static_cast<int>(vs.size());
    vs.push_back(v);
    boost::add_vertex(g);
    for (int j : nearest(model, vs, v.rho, 2 * options_.neighbours, id))
      addEdgePair(g, model, vs, id, j, options_);
    return id;
  };
  if (goal.spec().kind == GoalSpec::Kind::RestOf) {
    const Eigen::VectorXd rho = goal.targetInputs(), q = goal.targetDynamic();
    if (auto v = restVertex(model_ptr, checker, rho, &q)) goals.push_back(addQueryVertex(*v));
  }
  // Joint and point goals: if no vertex meets the goal, look for a rest pose that does (the
  // query-phase expansion of Esteves, Arechavaleta & Laumond, ICMA 2005) from the vertices
  // nearest to the goal: Gauss-Newton on the inputs from each of the five nearest, then local
  // random searches from them.  Another one is looked for when the roadmap has no path to those
  // found so far (their edges failed).  At most 4 attempts per start, so that what is found does
  // not depend on the machine's speed (a deadline the caller set can stop them sooner).
  const bool expand = goals.empty() && goal.spec().kind != GoalSpec::Kind::RestOf;
  std::vector<std::pair<double, int>> ranked;
  for (int i = 0; i < static_cast<int>(vs.size()); ++i) ranked.emplace_back(goalError(vs[i]), i);
  std::sort(ranked.begin(), ranked.end());
  const int starts = std::min<int>(5, static_cast<int>(ranked.size()));
  int attempts = 0;
  const auto findGoalVertex = [&] {
    const auto searching = [&] { return !timeUp(); };
    // Aim inside the tolerance: the swing settles onto the pose only to within numerics.
    const double aim = 0.9 * goal.tolerance();
    while (attempts < 4 * starts && searching()) {
      const int k = attempts++;
      const Vertex& from = vs[ranked[k % starts].second];
      auto v = k < starts ? descendToGoal(model_ptr, checker, goal, from, aim, searching)
                          : randomDescent(model_ptr, checker, goal, from, aim, rng, searching);
      if (v) {
        goals.push_back(addQueryVertex(*v));
        return true;
      }
    }
    return false;
  };
  if (expand) findGoalVertex();
  bool exact = !goals.empty();
  if (!exact) {
    // No vertex meets the goal: head for the one closest to it (an approximate plan).
    int best = -1;
    double best_err = std::numeric_limits<double>::infinity();
    for (int i = 0; i < static_cast<int>(vs.size()); ++i)
      if (i != s && goalError(vs[i]) < best_err) best_err = goalError(vs[i]), best = i;
    if (best < 0) {
      out.message = "no roadmap vertex to head for";
      return out;
    }
    goals.push_back(best);
  }
  if (std::find(goals.begin(), goals.end(), s) != goals.end()) {
    // Already there.
    out.found = true;
    out.exact = exact;
    out.goal_distance = goalError(vs[s]);
    out.inputs = RigTrajectory(options_.step_s, start_rho);
    appendHold(out.inputs, start_hold_s);
    out.path = {-1};
    return out;
  }

  // Search, check the unchecked edges of the path in order, repeat (Esteves, Arechavaleta &
  // Laumond, ICMA 2005 §IV-D).
  std::vector<int> path;
  while (true) {
    if (timeUp()) {
      out.message = "the deadline (" + formatNumber(time_limit_s) +
                    " s, as set) stopped the query while it checked the roadmap's edges";
      return out;
    }
    // A virtual goal node G linked at zero cost from every goal vertex, there for this search
    // only (it is the last vertex, so removing it renumbers nothing).  Heuristic: the fastest
    // any move could reach some goal vertex.
    const int G = static_cast<int>(boost::add_vertex(g));
    for (int v : goals) {
      EdgeProps e;
      e.state = EdgeState::Valid;
      boost::add_edge(v, G, e, g);
    }
    std::vector<double> h(boost::num_vertices(g), 0.0);
    for (int v = 0; v < G; ++v) {
      h[v] = std::numeric_limits<double>::infinity();
      for (int gv : goals) h[v] = std::min(h[v], timeLowerBound(model, vs[v].rho, vs[gv].rho));
    }
    const std::size_t n = boost::num_vertices(g);
    std::vector<BGraph::vertex_descriptor> pred(n);
    std::vector<double> dist(n);
    bool reached = false;
    try {
      boost::astar_search(
          g, static_cast<BGraph::vertex_descriptor>(s),
          [&](BGraph::vertex_descriptor v) { return h[v]; },
          boost::predecessor_map(
              boost::make_iterator_property_map(pred.begin(), boost::get(boost::vertex_index, g)))
              .distance_map(boost::make_iterator_property_map(dist.begin(),
                                                              boost::get(boost::vertex_index, g)))
              .weight_map(boost::get(&EdgeProps::cost, g))
              .visitor(GoalVisitor(G)));
    } catch (const FoundGoal&) {
      reached = true;
    }
    boost::clear_vertex(G, g);
    boost::remove_vertex(G, g);
    if (!reached) {
      if (expand && findGoalVertex()) continue;
      out.message = "the roadmap has no (remaining) path from the start to the goal";
      return out;
    }
    path.clear();
    for (int v = static_cast<int>(pred[G]); v != s; v = static_cast<int>(pred[v]))
      path.push_back(v);
    path.push_back(s);
    std::reverse(path.begin(), path.end());
    bool all_valid = true;
    for (std::size_t k = 0; k + 1 < path.size(); ++k) {
      const int a = path[k], b = path[k + 1];
      auto [e, exists] = boost::edge(a, b, g);
      if (!exists || g[e].state == EdgeState::Valid) continue;
      const EdgeCheck c = sim.check(vs[a].rho, vs[a].q, vs[b].rho, vs[b].q);
      ++out.edges_validated;
      out.propagations += c.propagations;
      out.collision_checks += c.collision_checks;
      if (c.ok) {
        g[e].state = EdgeState::Valid;
        g[e].settle_s = c.settle_s;
        g[e].cost = roadmap::edgeCost(g[e], options_);
      } else {
        ++out.edges_rejected;
      }
      // Remember the verdict in the roadmap itself for edges between its own vertices.
      if (a < permanent && b < permanent) {
        ++out.roadmap_edges_validated;
        std::lock_guard<std::mutex> lock(graph_->mutex);
        if (auto [pe, in_roadmap] = boost::edge(a, b, graph_->g); in_roadmap) {
          if (c.ok)
            graph_->g[pe] = g[e];
          else
            graph_->g[pe].state = EdgeState::Invalid;
        }
      }
      if (!c.ok) {
        boost::remove_edge(a, b, g);
        all_valid = false;
        break;
      }
      if (timeUp() && k + 2 < path.size()) {  // edges left unchecked: not a path yet
        all_valid = false;
        break;
      }
    }
    if (all_valid) break;
  }

  // The plan: from the start, each move and a hold until settled, simulated as one motion.
  out.found = true;
  out.exact = exact;
  out.inputs = RigTrajectory(options_.step_s, start_rho);
  std::vector<Vertex> targets;
  for (int v : path) {
    targets.push_back(vs[v]);
    out.path.push_back(v == s ? -1 : (v < permanent ? v : -2));
  }
  if (!sim.assemble(start_q, start_qdot, out.inputs, targets, exact ? &goal : nullptr,
                    out.propagations))
    out.message = "the swing did not settle everywhere along the path within " +
                  formatNumber(EdgeSimulator::kPathHold * options_.settle_max_s) + " s";
  out.goal_distance = goalError(vs[path.back()]);
  if (!exact)
    out.message = "no rest pose in the roadmap meets the goal; went to the closest (error " +
                  formatNumber(out.goal_distance) + ")";
  return out;
}

}  // namespace marionette
