// SPDX-License-Identifier: BSD-3-Clause
// Registers OMPL's SyclopRRT as "syclop-rrt", runs it beside the built-in planners on benchmark
// problems, and writes one OMPL benchmark log per problem:
//   custom_planner --problems puppetcopter-table,arm3d-pillars --runs 10 --out DIR
//                  [--planners est,rrt,syclop-rrt] [--time-limit S]
#include <ompl/control/planners/syclop/SyclopRRT.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "marionette/planner/benchmark.hpp"
#include "marionette/search/decomposition.hpp"
#include "marionette/search/registry.hpp"

namespace mt = marionette;

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

int main(int argc, char** argv) try {
  std::map<std::string, std::string> flags = {{"--runs", "10"}, {"--time-limit", "10"}};
  for (int i = 1; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  if (!flags.count("--problems") || !flags.count("--out"))
    throw std::invalid_argument("usage: custom_planner --problems LIST --runs N --out DIR");

  // The planner: Syclop's high-level guide over a grid of the search's projection, RRT below.
  mt::PlannerInfo info;
  info.name = "syclop-rrt";
  info.log_name = "control_SyclopRRT";
  info.source = "Syclop over RRT (Plaku, Kavraki & Vardi, IEEE T-RO 2010)";
  mt::registerPlanner(info, [](const mt::TreeSearchSpace& space, const mt::PlannerInfo&) {
    return std::make_shared<ompl::control::SyclopRRT>(space.spaceInformation(),
                                                      mt::projectionGrid(space, 10));
  });

  mt::BenchmarkOptions options;
  options.runs = std::stoi(flags["--runs"]);
  options.time_limit_s = std::stod(flags["--time-limit"]);
  if (flags.count("--planners")) options.planners = split(flags["--planners"]);
  const std::filesystem::path out = flags["--out"];
  std::filesystem::create_directories(out);
  for (const std::string& name : split(flags["--problems"])) {
    const mt::ProblemRuns runs = mt::runBenchmark(mt::findBenchmarkProblem(name), options);
    std::ofstream log(out / (name + ".log"));
    mt::writeOmplBenchmarkLog(runs, log);
    for (const mt::SummaryRow& row : mt::summarize(runs))
      std::cout << row.problem << " " << row.planner << ": " << row.exact << "/" << row.runs
                << " exact, median plan " << row.median_duration_s << " s\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "custom_planner: " << e.what() << "\n";
  return 2;
}
