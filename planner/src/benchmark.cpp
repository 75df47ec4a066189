// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/planner/benchmark.hpp"

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
#include "marionette/planner/roadmap_cache.hpp"
#include "motion_search.hpp"

namespace marionette {

namespace {

// How a planner's runs are named in OMPL's log: as runBenchmark recorded it, else as the
// registry has it, else (runs of a planner this process does not know, e.g. a server's plugin's
// in a fleet sweep) "control_" + its name.
std::string logName(const PlannerRuns& pr) {
  if (!pr.log_name.empty()) return pr.log_name;
  if (const std::optional<PlannerInfo> info = findPlanner(pr.planner)) return info->log_name;
  return "control_" + pr.planner;
}

bool isRoadmap(const PlannerRuns& pr) {
  if (pr.roadmap) return true;
  const std::optional<PlannerInfo> info = findPlanner(pr.planner);
  return info && info->kind == SearchKind::Roadmap;
}

double residentMegabytes() {
  return static_cast<double>(ompl::machine::getProcessMemoryUsage()) / (1024.0 * 1024.0);
}

// "REST+0.3" in a joint goal: that joint's value at the problem's start plus an offset.
std::string resolveRestOffsets(const ModelPtr& model, const BenchmarkProblem& problem) {
  const std::string& goal = problem.goal;
  const std::string marker = "=REST+";
  const auto at = goal.find(marker);
  if (at == std::string::npos) return goal;
  const auto name_begin = goal.find_last_of(":,", at) + 1;
  const std::string joint = goal.substr(name_begin, at - name_begin);
  const int i = model->variableIndex(joint);
  if (i < 0 || i >= model->nd())
    throw std::invalid_argument("benchmark goal: '" + joint + "' is not a joint");
  const StartState rest = resolveStart(
      model, problem.start_inputs.size() ? problem.start_inputs : model->defaultInputs(),
      problem.start);
  std::size_t used = 0;
  const double offset = std::stod(goal.substr(at + marker.size()), &used);
  std::ostringstream value;
  value.precision(9);
  value << rest.q[i] + offset;
  return goal.substr(0, at + 1) + value.str() + goal.substr(at + marker.size() + used);
}

int omplStatus(const BenchmarkRun& run) {
  using S = ompl::base::PlannerStatus;
  if (run.error) return S::CRASH;
  switch (run.outcome) {
    case PlanOutcome::Exact: return S::EXACT_SOLUTION;
    case PlanOutcome::Approximate: return S::APPROXIMATE_SOLUTION;
    case PlanOutcome::NotFound: return S::TIMEOUT;
  }
  return S::UNKNOWN;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// OMPL writes numbers with std::to_string / ompl::toString; any C++ stream format parses.
std::string number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return "inf";
  std::ostringstream os;
  os.precision(9);
  os << x;
  return os.str();
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
    }
    const std::optional<OptimizedPlan>& optimized = result.optimized;
    if (optimized) {
      run.optimization_tried = true;
      run.optimization = optimized->report;
      run.optimized_outcome = optimized->plan.outcome;
      run.optimized_quality = optimized->plan.quality;
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

const std::vector<BenchmarkProblem>& benchmarkProblems() {
  // The goals are the planning tests' (tests/test_planner.cpp); planar-arm's is its rest pose's
  // theta1 + 0.3 rad, filled in by runBenchmark.
  static const std::vector<BenchmarkProblem> problems = [] {
    std::vector<BenchmarkProblem> list = {
      {"planar-arm-empty",
       "planar arm: swing the tip 0.3 rad (theta1) away from rest",
       "planar-arm",
       "empty",
       "q:theta1=REST+0.3;tol=0.05",
       {},
       {},
       {}},
      {"arm3d-pillars",
       "3-D arm: the hand behind the front row of pillars, between two of them",
       "arm3d",
       "pillars",
       "point:hand=0.42,0,0.50;radius=0.05",
       {},
       {},
       {}},
      {"arm3d-pillars-past",
       "3-D arm: the hand past the front pillar at (0.30, 0.12)",
       "arm3d",
       "pillars",
       "point:hand=0.22,0.20,0.55;radius=0.05",
       {},
       {},
       {}},
      {"suspended-mass-window",
       "suspended mass: through the window, then settle at rest",
       "suspended-mass",
       "window",
       "rest-of:xr=0.7,r=0.3;at-rest",
       {},
       {},
       {}},
      {"puppetcopter-table",
       "PuppetCopter: left hand over the table's near edge",
       "puppetcopter",
       "table",
       "point:hand_l=0.05,0.24,0.40;radius=0.04",
       {},
       {},
       {}},
      {"marionette25-table",
       "marionette25 (25 joints, 21 inputs): the right hand across the body, over the table's "
       "near edge",
       "marionette25",
       "table",
       "point:hand_r=0.10,0.16,0.45;radius=0.05",
       {},
       {},
       {}},
      {"puppetcopter-living-room",
       "PuppetCopter among 20,848 mesh triangles: left hand up towards the coffee table",
       "puppetcopter",
       "living-room",
       "point:hand_l=0.25,0.05,0.40;radius=0.04",
       {},
       {},
       {}},
    };
    for (BenchmarkProblem& p : list) p.goal = resolveRestOffsets(loadModel(p.model), p);
    return list;
  }();
  return problems;
}

const BenchmarkProblem& findBenchmarkProblem(const std::string& name) {
  std::vector<std::string> known;
  for (const BenchmarkProblem& p : benchmarkProblems()) {
    if (p.name == name) return p;
    known.push_back(p.name);
  }
  throw FieldError("problem", "unknown '" + name + "' (expected " + joinNames(known) + ")");
}


RunResult planHere(const BenchmarkProblem&, const PlanRequest& request, bool optimize,
                   const OptimizationOptions& optimization) {
  PipelineOptions pipeline;
  if (optimize) pipeline.optimization = optimization;
  return runPipeline(request, pipeline);
}

ProblemRuns runBenchmark(const BenchmarkProblem& problem, const BenchmarkOptions& options) {
  if (options.runs < 1) throw std::invalid_argument("benchmark: runs must be >= 1");
  if (!(options.time_limit_s > 0.0))
    throw std::invalid_argument("benchmark: the time limit must be > 0 s");
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
  base.collision = std::make_shared<CollisionModel>(base.model, base.scene);
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
      const detail::TreeSearchSettings ts = detail::treeSearchSettings(po);
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

void writeOmplBenchmarkLog(const ProblemRuns& runs, std::ostream& out) {
  const BenchmarkProblem& p = runs.problem;
  // The library that ran the planners (Debian's OMPL_VERSION string is empty).
  out << "OMPL version " << OMPL_MAJOR_VERSION << '.' << OMPL_MINOR_VERSION << '.'
      << OMPL_PATCH_VERSION << '\n';
  out << "Experiment " << p.name << '\n';
  out << "0 experiment properties\n";
  out << "Running on " << ompl::machine::getHostname() << '\n';
  out << "Starting at " << runs.start_date << '\n';
  out << "<<<|\n"
      << "marionette planner benchmark: " << p.description << '\n'
      << "model " << p.model << ", scene " << p.scene << ", start: rest pose of the default "
      << "inputs, goal " << p.goal << '\n'
      << "Plans are re-simulated at 50 Hz from their resampled inputs and re-checked; 'solved' "
         "means that re-simulation is collision-free, within the rig's limits and reaches the "
         "goal.\n"
      << "Run r uses seed " << runs.options.first_seed << " + r; prm builds its roadmap once "
      << "(seed " << runs.options.roadmap.seed << ") and queries it in every run.\n"
      << "|>>>\n";
  out << "<<<|\n" << ompl::machine::getCPUInfo() << "|>>>\n";
  out << runs.options.first_seed << " is the random seed\n";
  out << number(runs.options.time_limit_s) << " seconds per run\n";
  out << "0 MB per run\n";
  out << runs.options.runs << " runs per planner\n";
  out << number(runs.total_time_s) << " seconds spent to collect the data\n";
  out << "1 enum type\nstatus";
  for (int i = 0; i < ompl::base::PlannerStatus::TYPE_COUNT; ++i)
    out << '|'
        << ompl::base::PlannerStatus(static_cast<ompl::base::PlannerStatus::StatusType>(i))
               .asString();
  out << '\n' << runs.planners.size() << " planners\n";

  // Property names become SQL column names in ompl_benchmark_statistics: words and spaces only.
  std::vector<std::string> properties = {"approximate solution BOOLEAN",
                                         "collision checks INTEGER",
                                         "correct solution BOOLEAN",
                                         "edges rejected INTEGER",
                                         "edges validated INTEGER",
                                         "goal time REAL",
                                         "graph states INTEGER",
                                         "memory REAL",
                                         "min tension REAL",
                                         "plan duration REAL",
                                         "propagations INTEGER",
                                         "roadmap build time REAL",
                                         "roadmap vertices INTEGER",
                                         "seed INTEGER",
                                         "solution clearance REAL",
                                         "solution difference REAL",
                                         "solution segments INTEGER",
                                         "solved BOOLEAN",
                                         "status ENUM",
                                         "time REAL",
                                         "total time REAL",
                                         "verification time REAL",
                                         "input jerk REAL",
                                         "string catches INTEGER",
                                         "peak tension ratio REAL",
                                         "residual joint speed REAL",
                                         "residual kinetic energy REAL"};
  // With optimization: whether and how it worked, and the quality of the plan it returned.
  const std::vector<std::string> optimization_properties = {
      "optimization tried BOOLEAN",
      "optimization success BOOLEAN",
      "optimization time REAL",
      "optimization iterations INTEGER",
      "optimization cost before REAL",
      "optimization cost after REAL",
      "optimized plan duration REAL",
      "optimized input jerk REAL",
      "optimized string catches INTEGER",
      "optimized peak tension ratio REAL",
      "optimized residual joint speed REAL",
      "optimized residual kinetic energy REAL",
      "optimized solution clearance REAL"};
  if (runs.options.optimize)
    properties.insert(properties.end(), optimization_properties.begin(),
                      optimization_properties.end());
  // A quality figure, or nothing when it was not measured.
  auto figure = [](const PlanQuality& q, double value) { return q.measured ? number(value) : ""; };
  for (const PlannerRuns& pr : runs.planners) {
    out << logName(pr) << '\n';
    out << pr.settings.size() << " common properties\n";
    for (const auto& [name, value] : pr.settings) out << name << " = " << value << '\n';
    out << properties.size() << " properties for each run\n";
    for (const std::string& name : properties) out << name << '\n';
    out << pr.runs.size() << " runs\n";
    for (const BenchmarkRun& r : pr.runs) {
      const bool exact = r.outcome == PlanOutcome::Exact && !r.error;
      const bool prm = isRoadmap(pr);
      const std::vector<std::string> values = {
          std::to_string(r.outcome == PlanOutcome::Approximate),
          std::to_string(r.stats.collision_checks),
          std::to_string(r.samples > 0 && r.collision_free && r.within_limits),
          prm ? std::to_string(r.stats.edges_rejected) : "",
          prm ? std::to_string(r.stats.edges_validated) : "",
          number(r.goal_time_s),
          std::to_string(prm ? r.stats.roadmap_vertices : r.stats.tree_states),
          number(r.memory_mb),
          number(r.min_tension_N),
          number(r.plan_duration_s),
          std::to_string(r.stats.propagations),
          prm ? number(r.stats.roadmap_build_time_s) : "",
          prm ? std::to_string(r.stats.roadmap_vertices) : "",
          std::to_string(r.seed),
          number(r.min_clearance_m),
          number(r.goal_distance),
          std::to_string(r.samples),
          std::to_string(exact),
          std::to_string(omplStatus(r)),
          number(r.time_s),
          number(r.total_time_s),
          number(r.stats.verification_time_s),
          figure(r.quality, r.quality.input_jerk_rms_overall),
          r.quality.measured ? std::to_string(r.quality.string_catches) : "",
          figure(r.quality, r.quality.peak_tension_ratio),
          figure(r.quality, r.quality.residual_joint_speed_rms),
          figure(r.quality, r.quality.residual_kinetic_energy_J)};
      for (const std::string& v : values) out << v << "; ";
      if (runs.options.optimize) {
        const PlanQuality& q = r.optimized_quality;
        const bool tried = r.optimization_tried;
        const std::vector<std::string> more = {
            std::to_string(tried),
            std::to_string(r.optimization_succeeded),
            tried ? number(r.optimization.time_s) : "",
            tried ? std::to_string(r.optimization.iterations) : "",
            tried ? number(r.optimization.before.total()) : "",
            tried ? number(r.optimization.after.total()) : "",
            figure(q, q.duration_s),
            figure(q, q.input_jerk_rms_overall),
            q.measured ? std::to_string(q.string_catches) : "",
            figure(q, q.peak_tension_ratio),
            figure(q, q.residual_joint_speed_rms),
            figure(q, q.residual_kinetic_energy_J),
            figure(q, q.min_stage_clearance_m)};
        for (const std::string& v : more) out << v << "; ";
      }
      out << '\n';
    }
    out << ".\n";
  }
}

std::vector<SummaryRow> summarize(const ProblemRuns& runs) {
  std::vector<SummaryRow> rows;
  for (const PlannerRuns& pr : runs.planners) {
    SummaryRow row;
    row.problem = runs.problem.name;
    row.planner = pr.planner;
    row.runs = static_cast<int>(pr.runs.size());
    std::vector<double> times, durations, clearances;
    for (const BenchmarkRun& r : pr.runs) {
      times.push_back(r.time_s);
      if (r.outcome == PlanOutcome::Approximate) ++row.approximate;
      if (r.outcome != PlanOutcome::Exact || r.error) continue;
      ++row.exact;
      durations.push_back(r.plan_duration_s);
      clearances.push_back(r.min_clearance_m);
    }
    if (isRoadmap(pr)) {
      row.roadmap_build_s = 0.0;
      for (const BenchmarkRun& r : pr.runs)
        row.roadmap_build_s = std::max(row.roadmap_build_s, r.stats.roadmap_build_time_s);
    }
    // Quality before and after optimization, over the runs that tried it.
    std::vector<std::vector<double>> before(7), after(7);
    auto collect = [](const PlanQuality& q, std::vector<std::vector<double>>& into) {
      const double figures[7] = {
          q.duration_s,           q.input_jerk_rms_overall,   double(q.string_catches),
          q.peak_tension_ratio,   q.residual_joint_speed_rms, q.residual_kinetic_energy_J,
          q.min_stage_clearance_m};
      for (int i = 0; i < 7; ++i) into[i].push_back(figures[i]);
    };
    std::vector<double> optimization_time;
    for (const BenchmarkRun& r : pr.runs) {
      if (!r.optimization_tried) continue;
      ++row.optimized;
      row.optimization_succeeded += r.optimization_succeeded;
      optimization_time.push_back(r.optimization.time_s);
      collect(r.quality, before);
      collect(r.optimized_quality, after);
    }
    auto medians = [](const std::vector<std::vector<double>>& v, SummaryRow::QualityMedians& m) {
      m = {median(v[0]), median(v[1]), median(v[2]), median(v[3]),
           median(v[4]), median(v[5]), median(v[6])};
    };
    medians(before, row.before);
    medians(after, row.after);
    row.median_optimization_time_s = median(optimization_time);
    row.success_rate = row.runs ? static_cast<double>(row.exact) / row.runs : 0.0;
    row.median_time_s = median(times);
    row.median_duration_s = median(durations);
    row.median_clearance_m = median(clearances);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace marionette
