// SPDX-License-Identifier: BSD-3-Clause
// Registers OMPL's Syclop planners (syclop_planners.cpp), runs them beside the built-in planners
// on benchmark problems, each exact plan optimized as `marionette bench planners` does (--raw:
// the search's plans only), and writes one OMPL benchmark log per problem:
//   custom_planner --problems planar-arm-empty,puppetcopter-table --runs 10 --out DIR
//                  [--planners est,rrt,syclop-rrt,syclop-est] [--time-limit S] [--raw]
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
  bool raw = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--raw") {
      raw = true;
    } else if (i + 1 < argc) {
      flags[flag] = argv[++i];
    } else {
      throw std::invalid_argument(flag + ": a value is missing");
    }
  }
  if (!flags.count("--problems") || !flags.count("--out"))
    throw std::invalid_argument("usage: custom_planner --problems LIST --runs N --out DIR [--raw]");

  marionette_register_planners();  // from here on, every part of the library knows them

  mt::BenchmarkOptions options;
  options.runs = std::stoi(flags["--runs"]);
  options.time_limit_s = std::stod(flags["--time-limit"]);
  if (flags.count("--planners")) options.planners = split(flags["--planners"]);
  options.optimize = !raw;  // the optimizer's defaults, as the CLI's
  std::string problem;
  options.on_run = [&](const std::string& planner, int run) {
    std::cerr << problem << " " << planner << " run " << run + 1 << "/" << options.runs << "\n";
  };
  const std::filesystem::path out = flags["--out"];
  std::filesystem::create_directories(out);
  for (const std::string& name : split(flags["--problems"])) {
    problem = name;
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
