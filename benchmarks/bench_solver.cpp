// SPDX-License-Identifier: BSD-3-Clause
// The transcription's interior point against Ipopt with MUMPS on the stage-worthy suite's problems
// (benchmarks/stage_worthy.py's cases) and marionette25's: each case planned as found (--raw),
// then the first solve optimizePlan would make of it solved by both from the same start, in one
// run, alternating which goes first, --rounds times.  Prints a Markdown row per case: the
// problem's size, each solver's iterations and median time per solve and per iteration, their
// ratio, and how far apart their optima are (docs/benchmarks.md, the solver).
//
//   bench_solver [--quick] [--rounds 3] [--iterations 200] [--only puppetcopter]
//   bench_solver --only "puppetcopter est 5"     (one case: its model, planner and seed)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_motion.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/trajopt/solver_comparison.hpp"

namespace {

using namespace marionette;

struct Case {
  std::string model, scene, goal, planner;
  int seed;
};

std::vector<Case> suite(bool quick) {
  const std::string pc = "point:hand_l=0.05,0.24,0.40;radius=0.04";
  const std::string m25 = "point:hand_r=0.10,0.16,0.45;radius=0.05";
  if (quick)
    return {{"puppetcopter", "table", pc, "rrt", 3}, {"marionette25", "table", m25, "kpiece", 1}};
  std::vector<Case> out;
  for (const char* planner : {"est", "rrt", "kpiece"})
    for (int seed = 1; seed <= 5; ++seed) out.push_back({"puppetcopter", "table", pc, planner, seed});
  for (const char* planner : {"est", "kpiece"})
    for (int seed = 1; seed <= 3; ++seed)
      out.push_back({"arm3d", "pillars", "point:hand=0.42,0,0.50;radius=0.05", planner, seed});
  for (int seed = 1; seed <= 2; ++seed) out.push_back({"marionette25", "table", m25, "kpiece", seed});
  for (int seed = 1; seed <= 3; ++seed)
    out.push_back({"suspended-mass", "window", "rest-of:xr=0.7,r=0.3;at-rest", "est", seed});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  int rounds = 3, iterations = 200;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--iterations" && i + 1 < argc) {
      iterations = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_solver [--quick] [--rounds N] [--iterations N] "
                           "[--only MODEL | \"MODEL PLANNER SEED\"]\n");
      return 2;
    }
  }
  const std::vector<Case> cases = suite(quick);
  if (!only.empty() &&
      std::none_of(cases.begin(), cases.end(), [&](const Case& c) {
        return c.model == only || c.model + " " + c.planner + " " + std::to_string(c.seed) == only;
      })) {
    std::fprintf(stderr, "bench_solver: --only '%s' names no case of the suite%s\n", only.c_str(),
                 quick ? " (--quick: puppetcopter rrt 3, marionette25 kpiece 1)" : "");
    return 2;
  }
  std::printf(
      "| case | knots | variables | rows | interior point: iterations, s/solve, ms/iteration | "
      "ipopt: iterations, s/solve, ms/iteration | ipopt / interior point per solve | "
      "objectives apart (relative) | rows' violation (interior point, ipopt) | "
      "interior point: factorizations (s), solves (s), evaluations (s) |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Case& c : cases) {
    const std::string name = c.model + " " + c.planner + " " + std::to_string(c.seed);
    if (!only.empty() && c.model != only && name != only) continue;
    PlanRequest request;
    request.model = loadModel(c.model);
    request.scene = loadScene(c.scene);
    request.goal = GoalSpec::parse(c.goal);
    request.options.planner = c.planner;
    request.options.seed = static_cast<unsigned long>(c.seed);
    const Plan plan = planMotion(request);
    if (plan.outcome == PlanOutcome::NotFound || plan.samples() < 2) {
      std::printf("| %s %s %d | no plan found |\n", c.model.c_str(), c.planner.c_str(), c.seed);
      continue;
    }
    OptimizationOptions options;
    options.max_iterations = iterations;
    std::vector<double> ours_s, ipopt_s;
    SolverComparison last;
    for (int r = 0; r < rounds; ++r) {
      last = compareSolvers(request, plan, options, r % 2 == 1);
      for (const SolverRun& run : last.runs) (run.solver == "ipopt" ? ipopt_s : ours_s).push_back(run.time_s);
    }
    const SolverRun* ours = nullptr;
    const SolverRun* ipopt = nullptr;
    for (const SolverRun& run : last.runs) (run.solver == "ipopt" ? ipopt : ours) = &run;
    const double t_ours = median(ours_s), t_ipopt = median(ipopt_s);
    std::printf(
        "| %s %s %d | %d | %d | %d | %d (%s), %.3f, %.1f | %d (%s), %.3f, %.1f | %.2f | %.1e | "
        "%.1e, %.1e | %d (%.2f), %d (%.2f), %.2f |\n",
        c.model.c_str(), c.planner.c_str(), c.seed, last.knots, last.variables, last.constraints,
        ours->iterations, ours->status.c_str(), t_ours,
        1e3 * t_ours / std::max(1, ours->iterations), ipopt->iterations, ipopt->status.c_str(),
        t_ipopt, 1e3 * t_ipopt / std::max(1, ipopt->iterations), t_ipopt / t_ours,
        std::abs(ours->objective - ipopt->objective) / std::max(1e-12, std::abs(ipopt->objective)),
        ours->violation, ipopt->violation, ours->factorizations, ours->factorization_s,
        ours->solves, ours->solve_s, ours->evaluation_s);
    std::fflush(stdout);
  }
  return 0;
}
