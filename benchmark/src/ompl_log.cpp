// SPDX-License-Identifier: BSD-3-Clause
// A problem's runs as OMPL's benchmark log, and their summary.
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

// What happened, as Planner Arena reads it: a plan's outcome; without one, a time limit or a
// propagation budget is a timeout, a planner that ended on its own gives its own status (an
// invalid goal or start, ...), the roadmap's query with no path is an abort.
int omplStatus(const BenchmarkRun& run) {
  using S = ompl::base::PlannerStatus;
  if (run.error) return S::CRASH;
  switch (run.outcome) {
    case PlanOutcome::Exact: return S::EXACT_SOLUTION;
    case PlanOutcome::Approximate: return S::APPROXIMATE_SOLUTION;
    case PlanOutcome::NotFound: break;
  }
  const std::string& ended = run.stats.search_ended;
  if (ended == "deadline" || ended == "propagations") return S::TIMEOUT;
  for (int s = S::UNKNOWN; s < S::TYPE_COUNT; ++s)
    if (ended == S(static_cast<S::StatusType>(s)).asString()) return s;
  return S::ABORT;
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

}  // namespace

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
                                         "snaps INTEGER",
                                         "peak tension ratio REAL",
                                         "residual joint speed REAL",
                                         "residual kinetic energy REAL",
                                         "stage worthy BOOLEAN"};
  // With optimization: whether and how it worked, and the quality of the plan it returned.
  const std::vector<std::string> optimization_properties = {
      "optimization tried BOOLEAN",
      "optimization success BOOLEAN",
      "optimization time REAL",
      "optimization iterations INTEGER",
      "optimized plan duration REAL",
      "optimized input jerk REAL",
      "optimized string catches INTEGER",
      "optimized snaps INTEGER",
      "optimized peak tension ratio REAL",
      "optimized residual joint speed REAL",
      "optimized residual kinetic energy REAL",
      "optimized solution clearance REAL",
      "optimized stage worthy BOOLEAN"};
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
          r.quality.measured ? std::to_string(r.quality.snaps) : "",
          figure(r.quality, r.quality.peak_tension_ratio),
          figure(r.quality, r.quality.residual_joint_speed_rms),
          figure(r.quality, r.quality.residual_kinetic_energy_J),
          std::to_string(r.stage_shortfalls.empty())};
      for (const std::string& v : values) out << v << "; ";
      if (runs.options.optimize) {
        const PlanQuality& q = r.optimized_quality;
        const bool tried = r.optimization_tried;
        const std::vector<std::string> more = {
            std::to_string(tried),
            std::to_string(r.optimization_succeeded),
            tried ? number(r.optimization.time_s) : "",
            tried ? std::to_string(r.optimization.iterations) : "",
            figure(q, q.duration_s),
            figure(q, q.input_jerk_rms_overall),
            q.measured ? std::to_string(q.string_catches) : "",
            q.measured ? std::to_string(q.snaps) : "",
            figure(q, q.peak_tension_ratio),
            figure(q, q.residual_joint_speed_rms),
            figure(q, q.residual_kinetic_energy_J),
            tried && q.measured ? number(r.optimized_min_clearance_m) : "",
            std::to_string(tried && r.optimized_stage_shortfalls.empty())};
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
      row.stage_worthy += r.stage_shortfalls.empty();
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
    auto collect = [](const PlanQuality& q, double min_stage_clearance_m,
                      std::vector<std::vector<double>>& into) {
      const double figures[7] = {
          q.duration_s,           q.input_jerk_rms_overall,   double(q.string_catches),
          q.peak_tension_ratio,   q.residual_joint_speed_rms, q.residual_kinetic_energy_J,
          min_stage_clearance_m};
      for (int i = 0; i < 7; ++i) into[i].push_back(figures[i]);
    };
    std::vector<double> optimization_time;
    for (const BenchmarkRun& r : pr.runs) {
      if (!r.optimization_tried) continue;
      ++row.optimized;
      row.optimization_succeeded += r.optimization_succeeded;
      row.optimized_stage_worthy += r.optimized_stage_shortfalls.empty();
      optimization_time.push_back(r.optimization.time_s);
      collect(r.quality, r.min_clearance_m, before);
      collect(r.optimized_quality, r.optimized_min_clearance_m, after);
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
