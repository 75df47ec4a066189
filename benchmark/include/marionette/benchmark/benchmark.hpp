// SPDX-License-Identifier: BSD-3-Clause
// Planner benchmarks: the same planning problems run by every planner, N times with
// different seeds, logged in OMPL's benchmark log format (doc/markdown/benchmark.md of OMPL) so
// that OMPL's own `ompl_benchmark_statistics` turns the logs into a Planner Arena database.
//
// Contents
//   BenchmarkProblem     a named (model, scene, start, goal) problem and the planners to run.
//   benchmarkProblems()  the built-in problems: the planner tests' problems plus living-room.
//   findBenchmarkProblem()  one of them by name.
//   RunResult / RunPlanner   one run's plan, and who plans it: this process by default, a fleet
//                        of servers in a fleet sweep (the CLI's bench planners --server).
//   BenchmarkOptions     runs, time limit, planners, progress, whether to optimize each plan, and
//                        how many runs at once.
//   BenchmarkRun / PlannerRuns / ProblemRuns   what was measured.
//   runBenchmark()       runs one problem.
//   writeOmplBenchmarkLog()   one problem's runs as an OMPL benchmark log.
//   SummaryRow / summarize()  success rate and medians per (problem, planner).
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "marionette/planner/pipeline.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct BenchmarkProblem {
  std::string name;                   // "arm3d-pillars": the log's experiment name and file name
  std::string description;            // one line
  std::string model;                  // built-in model name or file
  std::string scene;                  // built-in scene name or file
  // GoalSpec text.  "NAME=REST+0.3" in a joint goal: that joint's value at the start plus an
  // offset, resolved by runBenchmark (and already resolved in benchmarkProblems()).
  std::string goal;
  std::vector<std::string> planners;  // empty = every planner
  // The start: the rest pose of start_inputs (n_k; empty: the model's default inputs), joints
  // set by `start` as in PlanRequest (every built-in problem starts at rest).
  Eigen::VectorXd start_inputs;
  StartSpec start;
};

// The problems of the planner tests (tests/test_planner.cpp, same goals), and PuppetCopter in
// living-room; every goal as GoalSpec::parse reads it.
const std::vector<BenchmarkProblem>& benchmarkProblems();
// FieldError("problem") naming the known ones for a name that is not one of them.
const BenchmarkProblem& findBenchmarkProblem(const std::string& name);

// One run: the plan, and with BenchmarkOptions::optimize (for an exact plan) what optimizing it
// returned: the pipeline's result (pipeline.hpp).
using RunResult = PipelineResult;
// Plans one run: `problem` names its model and scene, `request` is complete (model and scene
// loaded, goal, options with planner and seed; request.options.roadmap_as_built is set, so that
// runs do not depend on one another).  Throws what planning throws (a failed run).
using RunPlanner =
    std::function<RunResult(const BenchmarkProblem& problem, const PlanRequest& request,
                            bool optimize, const OptimizationOptions& optimization)>;
// runPipeline with optimization when asked (an exact plan is then optimized): the local run.
RunResult planHere(const BenchmarkProblem& problem, const PlanRequest& request, bool optimize,
                   const OptimizationOptions& optimization);

struct BenchmarkOptions {
  int runs = 10;               // per planner; run r uses seed first_seed + r
  double time_limit_s = 10.0;  // per run (a prm roadmap build is extra, and measured)
  // Tree planners: integrator steps per run (0: none but the time limit); with it, a run that
  // fails is a function of (problem, planner, seed) as one that succeeds is.
  long max_propagations = 0;
  unsigned long first_seed = 1;
  std::vector<std::string> planners;  // empty = the problem's planners
  // prm: built once per problem (seed fixed), then queried by every run as built (no run sees
  // the edge verdicts of another).
  RoadmapOptions roadmap;
  // Each exact plan is then optimized (optimizePlan) with these options.
  bool optimize = false;
  OptimizationOptions optimization;
  // Who plans each run (default: planHere); with `parallel` > 1, called from that many threads
  // at once, runs handed out in order.  Results land in run order whatever order they finish in.
  RunPlanner plan_run;
  int parallel = 1;
  // Called as each run is handed out: (planner, run index), in order.
  std::function<void(const std::string&, int)> on_run;
  // Called after each run that returned a plan (from its thread): (planner, seed, the plan, the
  // plan the optimizer returned or nullptr when it was not optimized); e.g. to save them.
  std::function<void(const std::string&, unsigned long, const Plan&, const Plan*)> on_plans;
};

struct BenchmarkRun {
  unsigned long seed = 0;
  PlanOutcome outcome = PlanOutcome::NotFound;
  bool error = false;  // the planner threw (message in `message`)
  std::string message;
  double time_s = 0.0;           // planning time (OMPL solve or roadmap query)
  double total_time_s = 0.0;     // including verification and any roadmap build
  double memory_mb = 0.0;        // growth of the process's resident memory over the run
  double plan_duration_s = NAN;  // length of the input sequence
  double goal_time_s = NAN;      // when the re-simulation first satisfies the goal
  double goal_distance = NAN;    // the closest the re-simulation came to the goal
  double min_clearance_m = NAN;  // to the stage, over the re-simulation
  double min_tension_N = NAN;
  int samples = 0;
  bool collision_free = false;
  bool within_limits = false;
  PlanStatistics stats;
  PlanQuality quality;  // the plan's (measured when it has samples)
  // What keeps it off the stage (problem/plan_quality.hpp: stageShortfalls); empty: stage-worthy.
  std::vector<std::string> stage_shortfalls = {"no plan"};
  // With BenchmarkOptions::optimize, for an exact plan:
  bool optimization_tried = false;
  bool optimization_succeeded = false;  // an improved plan that is exact
  PlanOutcome optimized_outcome = PlanOutcome::NotFound;
  OptimizationReport optimization;  // what it did (time_s, iterations, cost before/after)
  PlanQuality optimized_quality;    // the plan it returned (the same plan when unchanged)
  double optimized_min_clearance_m = NAN;  // its clearance to the stage
  std::vector<std::string> optimized_stage_shortfalls = {"not optimized"};
};

struct PlannerRuns {
  std::string planner;
  // Its name in OMPL's log ("control_EST") and whether it is the roadmap: runBenchmark fills
  // them in from the registry; empty/false: looked up there when the log is written (a planner
  // the registry does not know is logged as "control_" + its name).
  std::string log_name;
  bool roadmap = false;
  std::map<std::string, std::string> settings;  // parameters, as OMPL's "common properties"
  std::vector<BenchmarkRun> runs;
};

struct ProblemRuns {
  BenchmarkProblem problem;
  BenchmarkOptions options;
  std::string start_date;  // as OMPL writes it
  double total_time_s = 0.0;
  std::vector<PlannerRuns> planners;
};

// Runs every planner `options.runs` times on `problem`, `options.parallel` runs at once (1:
// sequentially, so that timings are not shared with other work).  A planner that throws is recorded
// as a failed run, not propagated.  Throws FieldError for options out of range ("runs",
// "time_limit_s") and what loading the problem's model or scene throws.
ProblemRuns runBenchmark(const BenchmarkProblem& problem, const BenchmarkOptions& options);

// OMPL's benchmark log format.  Per run: time, memory, status (OMPL's PlannerStatus enum),
// solved (exact and verified), approximate solution, solution difference, plan duration,
// solution clearance, plus the planner's statistics.
void writeOmplBenchmarkLog(const ProblemRuns& runs, std::ostream& out);

struct SummaryRow {
  std::string problem, planner;
  int runs = 0, exact = 0, approximate = 0;
  double success_rate = 0.0;        // exact / runs
  double median_time_s = NAN;       // over all runs (a failed run counts its time used)
  double median_duration_s = NAN;   // over exact runs
  double median_clearance_m = NAN;  // over exact runs
  double roadmap_build_s = NAN;     // prm: the build, once per problem
  // With optimization: over the runs that tried it (exact plans).
  int optimized = 0, optimization_succeeded = 0;
  // Stage-worthy plans (stageShortfalls empty): as planned, and as the optimization returned.
  int stage_worthy = 0, optimized_stage_worthy = 0;
  double median_optimization_time_s = NAN;
  // Medians of the quality figures before (the plans) and after (what optimization returned).
  struct QualityMedians {
    double duration_s = NAN, input_jerk_rms = NAN, string_catches = NAN, peak_tension_ratio = NAN,
           residual_joint_speed_rms = NAN, residual_kinetic_energy_J = NAN,
           min_stage_clearance_m = NAN;
  };
  QualityMedians before, after;
};
std::vector<SummaryRow> summarize(const ProblemRuns& runs);

}  // namespace marionette

#pragma GCC visibility pop
