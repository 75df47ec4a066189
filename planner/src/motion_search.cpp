// SPDX-License-Identifier: BSD-3-Clause
// The two motion searches behind the planner table: OMPL's tree planners over the integrator,
// and the rest-pose roadmap.
#include "motion_search.hpp"

#include "marionette/common/clock.hpp"
#include "marionette/planner/roadmap_cache.hpp"
#include "ompl_planning.hpp"

namespace marionette::detail {
namespace {

class TreeSearch final : public MotionSearch {
 public:
  SearchResult search(const SearchProblem& problem) override { return searchTree(problem); }
};

// The roadmap for this (model, scene, options) from the request's cache (a cache for this call
// alone when it brings none), then a query on it.
class RoadmapSearch final : public MotionSearch {
 public:
  SearchResult search(const SearchProblem& problem) override {
    const PlanRequest& req = problem.request;
    const PlannerOptions& opt = req.options;
    RoadmapOptions ro = opt.roadmap;
    ro.step_s = opt.step_s;
    RoadmapCache own;
    RoadmapCache& cache = req.roadmaps ? *req.roadmaps : own;
    const ProgressFn& progress = problem.progress;
    const RoadmapCache::Lookup found = cache.get(
        problem.collision, ro,
        [&](int vertices, double elapsed) {
          if (!progress) return;
          PlanProgress p;
          p.phase = "roadmap";
          p.elapsed_s = elapsed;
          p.states = vertices;
          progress(p);
        },
        problem.cancelled);
    RestPoseRoadmap& roadmap = *found.roadmap;
    SearchResult out;
    if (found.built) out.stats.roadmap_build_time_s = roadmap.buildTime_s();
    const auto tq = SteadyClock::now();
    RestPoseRoadmap::QueryResult r =
        roadmap.query(problem.start.q, problem.start.qdot, problem.rho0, problem.goal,
                      opt.time_limit_s, opt.seed, problem.cancelled, !opt.roadmap_as_built);
    out.stats.planning_time_s = secondsSince(tq);
    if (r.edges_validated > 0) cache.remember(roadmap);  // the edges it checked, on disk too
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
