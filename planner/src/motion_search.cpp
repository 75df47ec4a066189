// SPDX-License-Identifier: BSD-3-Clause
// The two motion searches behind the planner table: OMPL's tree planners over the integrator,
// and the rest-pose roadmap.
#include "motion_search.hpp"

#include "marionette/common/clock.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/search/roadmap.hpp"

namespace marionette::detail {
namespace {

// A registered tree planner (search/tree_search.hpp) on the request's problem.
class TreeSearch final : public MotionSearch {
 public:
  SearchResult search(const SearchProblem& problem) override {
    const PlanRequest& req = problem.request;
    const TreeSearchSettings settings = treeSearchSettings(req.options);
    TreeSearchProblem p;
    p.collision = problem.collision;
    p.q0 = problem.start.q;
    p.qdot0 = problem.start.qdot;
    p.rho0 = problem.rho0;
    p.goal = req.goal;
    p.step_s = req.options.step_s;
    p.seed = req.options.seed;
    p.min_control_steps = settings.min_control_steps;
    p.max_control_steps = settings.max_control_steps;
    p.point_cell_m = settings.point_cell_m;
    TreeSearchOptions o;
    o.planner = req.options.planner;
    o.parameters = req.options.parameters;
    o.time_limit_s = req.options.time_limit_s;
    o.max_propagations = req.options.max_propagations > 0 ? req.options.max_propagations
                                                          : defaultPropagationBudget(*req.model);
    p.rest_of_inputs_only = req.options.hand_off_to_optimizer;
    if (problem.progress)
      o.progress = [&progress = problem.progress](const SearchCounters& c, double elapsed_s) {
        PlanProgress e;
        e.phase = "search";
        e.elapsed_s = elapsed_s;
        e.propagations = c.propagations;
        e.states = c.motions;
        e.best_goal_distance = c.best_goal_distance;
        progress(e);
      };
    return searchTree(p, o);
  }
};

// The roadmap for this (model, scene, options) from the request's store (built for this call
// alone when it brings none), then a query on it.
class RoadmapSearch final : public MotionSearch {
 public:
  SearchResult search(const SearchProblem& problem) override {
    const PlanRequest& req = problem.request;
    const PlannerOptions& opt = req.options;
    RoadmapOptions ro = opt.roadmap;
    ro.step_s = opt.step_s;
    const ProgressFn& progress = problem.progress;
    const RoadmapStore::BuildProgressFn build_progress = [&](int vertices, double elapsed) {
      if (!progress) return;
      PlanProgress p;
      p.phase = "roadmap";
      p.elapsed_s = elapsed;
      p.states = vertices;
      progress(p);
    };
    RoadmapStore::Lookup found;
    if (req.roadmaps) {
      found = req.roadmaps->get(problem.collision, ro, build_progress, problem.cancelled);
    } else {
      found.roadmap = RestPoseRoadmap::build(problem.collision, ro, build_progress,
                                             problem.cancelled);
      found.built = true;
    }
    RestPoseRoadmap& roadmap = *found.roadmap;
    SearchResult out;
    if (found.built) out.stats.roadmap_build_time_s = roadmap.buildTime_s();
    const auto tq = SteadyClock::now();
    RestPoseRoadmap::QueryResult r =
        roadmap.query(problem.start.q, problem.start.qdot, problem.rho0, problem.goal,
                      opt.time_limit_s, opt.seed, problem.cancelled, !opt.roadmap_as_built);
    out.stats.planning_time_s = secondsSince(tq);
    if (r.edges_validated > 0 && req.roadmaps) req.roadmaps->remember(roadmap);
    out.stats.roadmap_vertices = static_cast<long>(roadmap.vertices().size());
    out.stats.roadmap_edges = roadmap.edgeCount();
    out.stats.edges_validated = r.edges_validated;
    out.stats.edges_rejected = r.edges_rejected;
    out.stats.propagations = r.propagations;
    out.stats.collision_checks = r.collision_checks;
    out.stats.best_goal_distance = r.goal_distance;
    out.message = r.message;
    out.found = r.found;
    out.inputs = std::move(r.inputs);
    return out;
  }
};

}  // namespace


std::unique_ptr<MotionSearch> makeMotionSearch(const PlannerInfo& planner) {
  switch (planner.kind) {
    case SearchKind::Tree: return std::make_unique<TreeSearch>();
    case SearchKind::Roadmap: return std::make_unique<RoadmapSearch>();
  }
  return nullptr;
}

}  // namespace marionette::detail
