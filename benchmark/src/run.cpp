// SPDX-License-Identifier: BSD-3-Clause
// runBenchmark: every planner's runs of one problem, sequentially or from several threads.
#include "marionette/benchmark/benchmark.hpp"

#include <ompl/base/PlannerStatus.h>
#include <ompl/config.h>
#include <ompl/tools/benchmark/MachineSpecs.h>
#include <ompl/util/Time.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "marionette/common/clock.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "marionette/roadmap_store/roadmap_cache.hpp"
#include "problems.hpp"

namespace marionette {
namespace {

double residentMegabytes() {
  return static_cast<double>(ompl::machine::getProcessMemoryUsage()) / (1024.0 * 1024.0);
}

BenchmarkRun runOnce(const BenchmarkProblem& problem, const PlanRequest& base,
                     const std::string& planner, unsigned long seed,
                     const BenchmarkOptions& options) {
  PlanRequest req = base;
  req.options.planner = planner;
  req.options.seed = seed;
  BenchmarkRun run;
  run.seed = seed;
  const double memory0 = residentMegabytes();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const RunResult result = (options.plan_run ? options.plan_run : planHere)(
        problem, req, options.optimize, options.optimization);
    const Plan& plan = result.plan;
    run.outcome = plan.outcome;
    run.message = plan.message;
    run.stats = plan.stats;
    run.time_s = plan.stats.planning_time_s;
    run.samples = plan.samples();
    if (plan.samples() > 0) {
      run.plan_duration_s = plan.duration_s();
      run.goal_distance = plan.goal_distance_min;
      run.min_clearance_m = plan.min_stage_clearance_m;
      run.min_tension_N = plan.min_tension_N;
      run.collision_free = plan.collision_free;
      run.within_limits = plan.limit_violations.empty();
      if (plan.goal_sample >= 0) run.goal_time_s = plan.goal_sample / plan.rate_hz;
      run.quality = plan.quality;
      run.stage_shortfalls = stageShortfalls(plan);
    }
    const std::optional<OptimizedPlan>& optimized = result.optimized;
    if (optimized) {
      run.optimization_tried = true;
      run.optimization = optimized->report;
      run.optimized_outcome = optimized->plan.outcome;
      run.optimized_quality = optimized->plan.quality;
      run.optimized_min_clearance_m = optimized->plan.min_stage_clearance_m;
      run.optimized_stage_shortfalls = stageShortfalls(optimized->plan);
      run.optimization_succeeded =
          optimized->report.improved && optimized->plan.outcome == PlanOutcome::Exact;
    }
    if (options.on_plans && plan.samples() > 0)
      options.on_plans(planner, seed, plan, optimized ? &optimized->plan : nullptr);
    // Planning and verification, any roadmap build included, without any optimization.
    run.total_time_s = plan.stats.total_time_s;
  } catch (const PlanCancelled&) {
    throw;  // the sweep was stopped: not a run's error
  } catch (const std::exception& e) {
    run.error = true;
    run.message = e.what();
    run.time_s = run.total_time_s = secondsSince(t0);
  }
  run.memory_mb = std::max(0.0, residentMegabytes() - memory0);
  return run;
}

}  // namespace

RunResult planHere(const BenchmarkProblem&, const PlanRequest& request, bool optimize,
                   const OptimizationOptions& optimization) {
  PipelineOptions pipeline;
  if (optimize) pipeline.optimization = optimization;
  return runPipeline(request, pipeline);
}

ProblemRuns runBenchmark(const BenchmarkProblem& problem, const BenchmarkOptions& options) {
  if (options.runs < 1) throw FieldError("runs", "must be >= 1");
  if (!(options.time_limit_s > 0.0)) throw FieldError("time_limit_s", "must be > 0 s");
  ProblemRuns out;
  out.problem = problem;
  out.options = options;
  out.start_date = ompl::time::as_string(ompl::time::now());
  const auto t0 = std::chrono::steady_clock::now();

  PlanRequest base;
  base.model = loadModel(problem.model);
  base.start_inputs = problem.start_inputs;
  base.start = problem.start;
  base.scene = loadScene(problem.scene);
  base.collision =
      std::make_shared<CollisionModel>(base.model, base.scene, problemCollisionOptions());
  out.problem.goal = resolveRestOffsets(base.model, problem);
  base.goal = GoalSpec::parse(out.problem.goal);
  base.options.time_limit_s = options.time_limit_s;
  base.options.max_propagations = options.max_propagations;
  // One roadmap per problem: its seed stays fixed while the query seeds vary, so prm's first
  // run builds it (measured as roadmap build time) and the others query the cached one, as
  // built: no run depends on another's verdicts (nor, in a fleet sweep, on a server's history).
  base.options.roadmap = options.roadmap;
  base.options.roadmap_as_built = true;
  RoadmapCache roadmaps;
  base.roadmaps = &roadmaps;

  std::vector<std::string> planners = options.planners;
  if (planners.empty()) planners = problem.planners;
  if (planners.empty()) planners = plannerNames();
  for (const std::string& planner : planners) {
    PlannerRuns pr;
    pr.planner = planner;
    pr.settings = plannerParameters(planner);  // throws for an unknown planner
    const PlannerInfo info = *findPlanner(planner);
    pr.log_name = info.log_name;
    pr.roadmap = info.kind == SearchKind::Roadmap;
    if (info.kind == SearchKind::Tree) {
      PlannerOptions po;
      po.planner = planner;
      const TreeSearchSettings ts = treeSearchSettings(po);
      pr.settings["min_control_steps"] = std::to_string(ts.min_control_steps);
      pr.settings["max_control_steps"] = std::to_string(ts.max_control_steps);
      pr.settings["projection_point_cell_m"] = std::to_string(ts.point_cell_m);
    }
    if (info.kind == SearchKind::Roadmap) {
      std::istringstream is(options.roadmap.describe());
      std::string item;
      std::string name, value;
      while (is >> item)
        if (splitNameValue(item, name, value)) pr.settings[name] = value;
    }
    out.planners.push_back(std::move(pr));
  }
  // Every (planner, run), handed out in order to `parallel` threads; each result in its place.
  std::vector<std::pair<std::size_t, int>> work;
  for (std::size_t p = 0; p < out.planners.size(); ++p) {
    out.planners[p].runs.resize(options.runs);
    for (int r = 0; r < options.runs; ++r) work.emplace_back(p, r);
  }
  std::mutex handing_out;
  std::size_t next = 0;
  auto worker = [&] {
    while (true) {
      std::size_t p;
      int r;
      {
        std::lock_guard<std::mutex> lock(handing_out);
        if (next == work.size()) return;
        std::tie(p, r) = work[next++];
        if (options.on_run) options.on_run(out.planners[p].planner, r);
      }
      out.planners[p].runs[r] =
          runOnce(out.problem, base, out.planners[p].planner, options.first_seed + r, options);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::max(1, options.parallel); ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  out.total_time_s = secondsSince(t0);
  return out;
}

}  // namespace marionette
