// SPDX-License-Identifier: BSD-3-Clause
// Registers OMPL's Syclop planners (syclop_planners.cpp), runs them beside the built-in planners
// on benchmark problems, and writes one OMPL benchmark log per problem:
//   custom_planner --problems puppetcopter-table,arm3d-pillars --runs 10 --out DIR
//                  [--planners est,rrt,syclop-rrt,syclop-est] [--time-limit S]
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "marionette/benchmark/benchmark.hpp"

namespace mt = marionette;

extern "C" void marionette_register_planners();  // syclop_planners.cpp

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

  marionette_register_planners();  // from here on, every part of the library knows them

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
