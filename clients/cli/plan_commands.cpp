#include "plan_commands.hpp"

#include <chrono>
#include <cmath>
#include <iostream>
#include <sstream>

#include "cli_util.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/planner/planner.hpp"

namespace marionette::cli {
namespace {

// "rest", "q:NAME=V,..." (as simulate), or "rest-of:VAR=V,..." (the rest pose of those inputs,
// the others at their defaults).
void parseStart(const Model& model, const std::string& text, PlanRequest& req) {
  req.start_text = text;
  if (text.rfind("rest-of:", 0) == 0) {
    req.start_inputs = model.defaultInputs();
    std::istringstream is(text.substr(8));
    std::string item;
    while (std::getline(is, item, ',')) {
      const auto eq = item.find('=');
      const std::string name = item.substr(0, eq);
      const int i = model.variableIndex(name);
      if (eq == std::string::npos || i < model.nd())
        throw std::invalid_argument("--start: rest-of: '" + name +
                                    "' is not a kinematic variable=VALUE of '" + model.name + "'");
      req.start_inputs[i - model.nd()] = parseNumber("--start " + name, item.substr(eq + 1));
    }
    return;
  }
  req.start = StartSpec::parse(text);
}

std::map<std::string, std::string> parseParams(const std::vector<std::string>& items) {
  std::map<std::string, std::string> out;
  for (const std::string& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("--param: expected NAME=VALUE, got '" + item + "'");
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

void printSummary(const Plan& plan, std::ostream& os) {
  os << "plan " << plan.model << " / " << plan.scene << " with " << plan.stats.planner << " (seed "
     << plan.seed << "): " << toString(plan.outcome);
  if (!plan.message.empty()) os << " -- " << plan.message;
  os << '\n';
  if (plan.samples() == 0) return;
  os << formatted("  %d samples at %g Hz (%.2f s); goal %s", plan.samples(), plan.rate_hz,
                  plan.duration_s(),
                  plan.goal_sample >= 0
                      ? formatted("reached at %.2f s", plan.goal_sample / plan.rate_hz).c_str()
                      : formatted("missed by %.4g", plan.goal_distance_min).c_str())
     << '\n';
  os << formatted(
            "  min clearance to the stage %.4f m (t = %.2f s), to anything %.4f m; "
            "min tension %.3f N",
            plan.min_stage_clearance_m, plan.min_stage_clearance_sample / plan.rate_hz,
            plan.min_clearance_m, plan.min_tension_N)
     << '\n';
  const PlanStatistics& s = plan.stats;
  os << formatted(
      "  planner %.3f s, verification %.3f s; %ld propagations, %ld collision "
      "checks",
      s.planning_time_s, s.verification_time_s, s.propagations, s.collision_checks);
  if (s.planner == "prm")
    os << formatted(
        "; roadmap %ld vertices, %ld edges (built in %.2f s), %ld edges checked, "
        "%ld rejected",
        s.roadmap_vertices, s.roadmap_edges, s.roadmap_build_time_s, s.edges_validated,
        s.edges_rejected);
  else
    os << formatted("; %ld states in the tree", s.tree_states);
  os << '\n';
}

}  // namespace

int cmdPlan(int argc, char** argv) {
  const Args a = parseArgs(
      argc, argv, 2,
      {"--model", "--scene", "--planner", "--goal", "--start", "--time-limit", "--seed", "--rate",
       "--step", "--param", "--roadmap", "--roadmap-vertices", "--out", "--inputs-csv"},
      {"--quiet", "--json-summary"});
  if (!a.values.count("--model")) throw std::invalid_argument("plan needs --model NAME|FILE");
  if (!a.values.count("--goal"))
    throw std::invalid_argument(
        "plan needs --goal (q:NAME=V,... | point:NAME=x,y,z | "
        "rest-of:VAR=V,...)");
  PlanRequest req;
  req.model = loadModel(a.values.at("--model"));
  req.scene = loadScene(a.values.count("--scene") ? a.values.at("--scene") : "empty");
  PlannerOptions& opt = req.options;
  if (a.values.count("--planner")) opt.planner = a.values.at("--planner");
  const std::vector<std::string>& goals = a.all.at("--goal");
  req.goal = GoalSpec::parse(goals[0]);
  for (std::size_t i = 1; i < goals.size(); ++i) req.goal.merge(GoalSpec::parse(goals[i]));
  if (a.values.count("--start")) parseStart(*req.model, a.values.at("--start"), req);
  if (a.values.count("--time-limit"))
    opt.time_limit_s = parseNumber("--time-limit", a.values.at("--time-limit"));
  if (a.values.count("--seed")) {
    const double seed = parseNumber("--seed", a.values.at("--seed"));
    if (seed < 0 || seed != std::floor(seed) || seed > 4e9)
      throw std::invalid_argument("--seed: expected a whole number 0..4e9");
    opt.seed = static_cast<unsigned long>(seed);
  }
  if (a.values.count("--rate")) opt.rate_hz = parseNumber("--rate", a.values.at("--rate"));
  if (a.values.count("--step")) opt.step_s = parseNumber("--step", a.values.at("--step"));
  if (a.all.count("--param")) opt.params = parseParams(a.all.at("--param"));
  if (a.values.count("--roadmap")) opt.roadmap_file = a.values.at("--roadmap");
  if (a.values.count("--roadmap-vertices")) {
    const double v = parseNumber("--roadmap-vertices", a.values.at("--roadmap-vertices"));
    if (v < 2 || v != std::floor(v) || v > 100000)
      throw std::invalid_argument("--roadmap-vertices: expected a whole number >= 2");
    opt.roadmap.vertices = static_cast<int>(v);
  }
  opt.roadmap.seed = opt.seed;
  const bool quiet = a.switches.count("--quiet");
  const auto t0 = std::chrono::steady_clock::now();
  ProgressFn progress;
  if (!quiet)
    progress = [&](const PlanProgress& p) {
      if (p.elapsed_s < 1.0) return;  // only long plans report
      std::cerr << formatted("[%6.1f s] %-7s", p.elapsed_s, p.phase.c_str());
      if (p.phase == "search")
        std::cerr << formatted(" %ld states, %ld propagations, best goal distance %.4g", p.states,
                               p.propagations, p.best_goal_distance);
      else if (p.phase == "roadmap")
        std::cerr << formatted(" %ld rest poses", p.states);
      std::cerr << '\n';
    };
  const Plan plan = planMotion(req, progress);
  (void)t0;
  if (a.values.count("--out") && plan.samples() > 0)
    writeFileAtomically(a.values.at("--out"), [&](std::ostream& os) { writePlanJson(plan, os); });
  if (a.values.count("--inputs-csv") && plan.samples() > 0)
    writeFileAtomically(a.values.at("--inputs-csv"),
                        [&](std::ostream& os) { writeInputsCsv(plan, os); });
  printSummary(plan, std::cout);
  switch (plan.outcome) {
    case PlanOutcome::Exact: return 0;
    case PlanOutcome::Approximate: return 4;
    case PlanOutcome::NotFound: return 5;
  }
  return 5;
}

}  // namespace marionette::cli
