// SPDX-License-Identifier: BSD-3-Clause
#include "bench_command.hpp"

#include <cmath>
#include <functional>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "cli_util.hpp"
#include "marionette/benchmark/benchmark.hpp"
#include "marionette/common/clock.hpp"
#include "marionette/plan/plan_file.hpp"
#include "marionette/planner/pipeline.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/service/wire.hpp"
#include "optimize_options.hpp"
#include "remote.hpp"

namespace marionette::cli {
namespace {

// `bench planners --server`: each run a Plan call to the fleet (balanced, retried on
// UNAVAILABLE: a seeded plan is the same on any server).  A run the server refuses
// (INVALID_ARGUMENT, NOT_FOUND, ABORTED) is a failed run, as a planner's throw is here; a fleet
// that cannot answer stops the sweep (`failure` says why).
class FleetRuns {
 public:
  explicit FleetRuns(const Args& a) : remote_(remoteOptions(a)) {}

  RunResult operator()(const BenchmarkProblem& problem, const PlanRequest& req, bool optimize,
                       const OptimizationOptions& optimization) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failure_.empty()) throw std::runtime_error("the sweep stopped: " + failure_);
    }
    v1::PlanRequest r;
    *r.mutable_model() = modelRef(problem.model);
    *r.mutable_scene() = sceneRef(problem.scene);
    goalAndOptionsToProto(req, r);
    r.set_raw(true);
    RunResult out;
    out.plan = wire::planFromProto(call(r));
    // The optimizer's run: the same seeded request with optimization (the server plans the same
    // plan again, then optimizes it), so that the log has the plan's figures and the optimized
    // plan's, as a local run's.
    if (optimize && optimizable(out.plan)) {  // as runPipeline does
      r.set_raw(false);
      wire::optimizationOptionsToProto(optimization, r.mutable_optimization());
      const v1::PlanResponse optimized = call(r);
      out.optimized = OptimizedPlan{wire::planFromProto(optimized),
                                    wire::optimizationReportFromProto(optimized.optimization())};
    }
    return out;
  }
  std::string failure() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }

 private:
  v1::PlanResponse call(const v1::PlanRequest& r) {
    grpc::ClientContext ctx;
    remote_.prepare(ctx);
    v1::PlanResponse response;
    const grpc::Status status = remote_.stub().Plan(&ctx, r, &response);
    try {
      remote_.check(status, "Plan");
    } catch (const RemoteError& e) {
      if (e.exitStatus() == 6) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (failure_.empty()) failure_ = e.what();
      }
      throw;
    }
    return response;
  }
  Remote remote_;
  mutable std::mutex mutex_;
  std::string failure_;
};

std::string cell(double x, const char* format) {
  return std::isfinite(x) ? formatted(format, x) : "-";
}

void printSummaryTable(const std::vector<SummaryRow>& rows, std::ostream& os) {
  os << "| problem | planner | runs | exact | approx. | success | median time (s) | "
        "median plan duration (s) | median clearance (m) | roadmap build (s) |\n"
     << "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const SummaryRow& r : rows)
    os << "| " << r.problem << " | " << r.planner << " | " << r.runs << " | " << r.exact << " | "
       << r.approximate << " | " << formatted("%.0f %%", 100.0 * r.success_rate) << " | "
       << cell(r.median_time_s, "%.3f") << " | " << cell(r.median_duration_s, "%.2f") << " | "
       << cell(r.median_clearance_m, "%.4f") << " | " << cell(r.roadmap_build_s, "%.1f") << " |\n";
}

// `bench planners --optimize`: per problem and planner, the optimization's success and time and
// the quality medians of the plans before -> after.
void printOptimizationTable(const std::vector<SummaryRow>& rows, std::ostream& os) {
  os << "| problem | planner | optimized | exact & better | stage-worthy | median time (s) | "
        "duration (s) | input jerk rms | string catches | peak tension ratio | joint speed rms "
        "after 1 s | min stage clearance (m) |\n"
     << "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  auto pair = [](double before, double after, const char* format) {
    return cell(before, format) + " → " + cell(after, format);
  };
  for (const SummaryRow& r : rows)
    os << "| " << r.problem << " | " << r.planner << " | " << r.optimized << " | "
       << r.optimization_succeeded << " | " << r.stage_worthy << " → " << r.optimized_stage_worthy
       << " | " << cell(r.median_optimization_time_s, "%.1f") << " | "
       << pair(r.before.duration_s, r.after.duration_s, "%.2f") << " | "
       << pair(r.before.input_jerk_rms, r.after.input_jerk_rms, "%.3g") << " | "
       << pair(r.before.string_catches, r.after.string_catches, "%g") << " | "
       << pair(r.before.peak_tension_ratio, r.after.peak_tension_ratio, "×%.1f") << " | "
       << pair(r.before.residual_joint_speed_rms, r.after.residual_joint_speed_rms, "%.2f") << " | "
       << pair(r.before.min_stage_clearance_m, r.after.min_stage_clearance_m, "%.4f") << " |\n";
}

}  // namespace

int cmdBenchPlanners(int argc, char** argv) {
  if (argc < 3 || std::string(argv[2]) != "planners")
    throw std::invalid_argument("bench: expected 'bench planners' (the only benchmark here)");
  const Args a =
      parseArgs(argc, argv, 3,
                {"--runs", "--time-limit", "--max-propagations", "--seed", "--problems",
                 "--planners", "--out", "--plugin", "--settle", "--optimize-time",
                 "--optimize-iterations", "--optimizer", "--weight", "--margin", "--server",
                 "--token-file", "--tls-ca", "--parallel"},
                {"--quick", "--optimize", "--raw", "--save-plans"});
  if (!a.values.count("--out")) throw std::invalid_argument("bench planners needs --out DIR");
  loadPlugins(a);
  BenchmarkOptions opt;
  const bool quick = a.switches.count("--quick");
  opt.runs = quick ? 2 : 10;
  opt.time_limit_s = quick ? 3.0 : 10.0;
  if (a.values.count("--runs")) {
    opt.runs = static_cast<int>(wholeNumber("--runs", a.values.at("--runs"), 1, 10000));
  }
  if (a.values.count("--time-limit")) {
    opt.time_limit_s = parseNumber("--time-limit", a.values.at("--time-limit"));
    if (!(opt.time_limit_s > 0.0)) throw std::invalid_argument("--time-limit: must be > 0 s");
  }
  if (a.values.count("--max-propagations"))
    opt.max_propagations = static_cast<long>(
        wholeNumber("--max-propagations", a.values.at("--max-propagations"), 0, 1e10));
  if (a.values.count("--seed")) {
    opt.first_seed =
        static_cast<unsigned long>(wholeNumber("--seed", a.values.at("--seed"), 0, 4e9));
  }
  if (a.values.count("--planners")) {
    opt.planners = splitCommas(a.values.at("--planners"));
    for (const std::string& p : opt.planners)
      if (!findPlanner(p))
        throw std::invalid_argument("--planners: unknown '" + p + "' (expected " +
                                    joinNames(plannerNames()) + ")");
  }
  opt.optimize = optimizeUnlessRaw(a);
  if (opt.optimize) {
    opt.optimization = parseOptimizationOptions(a);
    // A benchmark's runs are bounded in time: the optimizer's deadline 20 s unless set (a run
    // it stops says so in its log, and the summary says the deadline).
    constexpr double kBenchOptimizeDeadline_s = 20.0;
    if (!a.values.count("--optimize-time"))
      opt.optimization.time_limit_s = kBenchOptimizeDeadline_s;
  }
  // A fleet sweep: every run a Plan call to --server, --parallel at once (default: one per
  // server listed).  In-process, --parallel runs share the machine (and their timings do).
  std::optional<FleetRuns> fleet;
  if (a.values.count("--server")) {
    fleet.emplace(a);
    opt.plan_run = std::ref(*fleet);
    opt.parallel = static_cast<int>(splitCommas(a.values.at("--server")).size());
  } else {
    for (const char* flag : {"--token-file", "--tls-ca"})
      if (a.values.count(flag))
        throw std::invalid_argument(std::string(flag) +
                                    " applies to a fleet sweep (--server) only");
  }
  if (a.values.count("--parallel"))
    opt.parallel = static_cast<int>(wholeNumber("--parallel", a.values.at("--parallel"), 1, 1024));
  std::vector<BenchmarkProblem> problems = benchmarkProblems();
  if (a.values.count("--problems")) {
    std::vector<BenchmarkProblem> chosen;
    for (const std::string& name : splitCommas(a.values.at("--problems"))) {
      try {
        chosen.push_back(findBenchmarkProblem(name));
      } catch (const FieldError& e) {
        throw std::invalid_argument("--problems: " + e.problem());
      }
    }
    problems = chosen;
  }
  const std::filesystem::path dir = a.values.at("--out");
  std::filesystem::create_directories(dir);

  const auto t0 = SteadyClock::now();
  std::vector<SummaryRow> rows;
  for (const BenchmarkProblem& problem : problems) {
    if (a.switches.count("--save-plans")) {
      // DIR/plans/PROBLEM-PLANNER-SEED.json and .csv, and -optimized.json/.csv beside them.
      std::filesystem::create_directories(dir / "plans");
      opt.on_plans = [&](const std::string& planner, unsigned long seed, const Plan& plan,
                         const Plan* optimized) {
        const std::string stem =
            (dir / "plans" / (problem.name + "-" + planner + "-" + std::to_string(seed))).string();
        const auto save = [](const Plan& p, const std::string& path) {
          writeFileAtomically(path + ".json", [&](std::ostream& os) { writePlanJson(p, os); });
          writeFileAtomically(path + ".csv", [&](std::ostream& os) { writeInputsCsv(p, os); });
        };
        save(plan, stem);
        if (optimized) save(*optimized, stem + "-optimized");
      };
    }
    opt.on_run = [&](const std::string& planner, int run) {
      if (run == 0)
        std::cerr << formatted("[%6.0f s] %s: %s ", secondsSince(t0), problem.name.c_str(),
                               planner.c_str());
      std::cerr << '.' << (run + 1 == opt.runs ? "\n" : "") << std::flush;
    };
    const ProblemRuns runs = runBenchmark(problem, opt);
    if (fleet && !fleet->failure().empty()) throw RemoteError(6, fleet->failure());
    const std::string log = (dir / (problem.name + ".log")).string();
    writeFileAtomically(log, [&](std::ostream& os) { writeOmplBenchmarkLog(runs, os); });
    for (const SummaryRow& row : summarize(runs)) rows.push_back(row);
  }
  const double total_s = secondsSince(t0);
  std::ostringstream table;
  table << formatted("%d runs per planner, %g s per run, seeds %lu..%lu; %.0f s in all", opt.runs,
                     opt.time_limit_s, opt.first_seed, opt.first_seed + opt.runs - 1, total_s);
  if (fleet)
    table << formatted(" (on %s, %d at once)", a.values.at("--server").c_str(), opt.parallel);
  table << "\n\n";
  printSummaryTable(rows, table);
  if (opt.optimize) {
    const double deadline_s = opt.optimization.time_limit_s;
    table << formatted(
        "\nOptimized (margin %g m, settle %g s, %s); medians, the plans -> the optimized "
        "plans:\n\n",
        opt.optimization.margin_m, opt.optimization.settle_s,
        deadline_s > 0 ? formatted("at most %g s each", deadline_s).c_str()
                       : formatted("at most %d iterations a solve", opt.optimization.max_iterations)
                             .c_str());
    printOptimizationTable(rows, table);
  }
  writeFileAtomically((dir / "summary.md").string(), [&](std::ostream& os) { os << table.str(); });
  std::cout << table.str() << "logs: " << dir.string()
            << "/*.log (ompl_benchmark_statistics DIR/*.log -d bench.db)\n";
  return 0;
}

}  // namespace marionette::cli
