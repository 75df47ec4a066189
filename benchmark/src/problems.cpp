// SPDX-License-Identifier: BSD-3-Clause
// The built-in benchmark problems, their goals resolved.
#include "marionette/benchmark/benchmark.hpp"

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
#include "problems.hpp"

namespace marionette {

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

const std::vector<BenchmarkProblem>& benchmarkProblems() {
  // The goals are the planning tests' (tests/test_planner.cpp); planar-arm's is its rest pose's
  // theta1 + 0.3 rad, resolved here.
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

}  // namespace marionette
