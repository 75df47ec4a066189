// SPDX-License-Identifier: BSD-3-Clause
#include "plan_commands.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>

#include "cli_util.hpp"
#include "marionette/benchmark/benchmark.hpp"
#include "marionette/common/clock.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/plan/plan_file.hpp"
#include "marionette/planner/pipeline.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/roadmap_store/roadmap_cache.hpp"
#include "marionette/search/plugin.hpp"
#include "marionette/service/wire.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"
#include "optimize_options.hpp"
#include "quality_text.hpp"
#include "remote.hpp"
#include "start_text.hpp"

namespace marionette::cli {
namespace {

std::map<std::string, std::string> parseParams(const std::vector<std::string>& items) {
  std::map<std::string, std::string> out;
  for (const std::string& item : items) {
    std::string name, value;
    if (!splitNameValue(item, name, value))
      throw std::invalid_argument("--param: expected NAME=VALUE, got '" + item + "'");
    out[name] = value;
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
  printQuality(plan, os);
  const PlanStatistics& s = plan.stats;
  os << formatted(
      "  planner %.3f s, verification %.3f s; %ld propagations, %ld collision "
      "checks",
      s.planning_time_s, s.verification_time_s, s.propagations, s.collision_checks);
  if (const std::optional<PlannerInfo> info = findPlanner(s.planner);
      info && info->kind == SearchKind::Roadmap)
    os << formatted(
        "; roadmap %ld vertices, %ld edges (built in %.2f s), %ld edges checked, "
        "%ld rejected",
        s.roadmap_vertices, s.roadmap_edges, s.roadmap_build_time_s, s.edges_validated,
        s.edges_rejected);
  else
    os << formatted("; %ld states in the tree", s.tree_states);
  os << '\n';
}

// `plan --server`: the request as the server takes it, progress from PlanStream, and the plan
// back as the very type the in-process path returns (so the files and summary are the same).
// With `optimization`, the server optimizes the plan (*report gets what it did); without, the
// request is `raw`.
Plan planRemote(const Args& a, const PlanRequest& req, const ProgressFn& progress,
                const OptimizationOptions* optimization = nullptr,
                std::optional<OptimizationReport>* report = nullptr, bool gains = false) {
  for (const char* local_only : {"--roadmap", "--roadmap-vertices"})
    if (a.values.count(local_only))
      throw std::invalid_argument(std::string(local_only) +
                                  ": a server keeps its own roadmaps (marionette-server "
                                  "--roadmap-dir); not with --server");
  Remote remote(remoteOptions(a));
  v1::PlanRequest r;
  *r.mutable_model() = modelRef(a.values.at("--model"));
  if (a.values.count("--scene")) *r.mutable_scene() = sceneRef(a.values.at("--scene"));
  if (a.values.count("--start"))
    *r.mutable_start() = startToProto(parseStartText(a.values.at("--start")));
  goalAndOptionsToProto(req, r);
  if (optimization)
    wire::optimizationOptionsToProto(*optimization, r.mutable_optimization());
  else
    r.set_raw(true);
  if (gains) r.mutable_gains()->set_enabled(true);
  std::optional<Plan> plan;
  remote.check(remote.streamed("PlanStream",
                               [&](grpc::ClientContext& ctx) {
                                 plan.reset();
                                 auto stream = remote.stub().PlanStream(&ctx, r);
                                 v1::PlanEvent event;
                                 while (stream->Read(&event)) {
                                   if (event.has_progress() && progress)
                                     progress(wire::progressFromProto(event.progress()));
                                   if (event.has_plan()) {
                                     plan = wire::planFromProto(event.plan());
                                     if (report && event.plan().has_optimization())
                                       *report = wire::optimizationReportFromProto(
                                           event.plan().optimization());
                                   }
                                 }
                                 return stream->Finish();
                               }),
               "PlanStream");
  if (!plan) throw RemoteError(6, "server " + a.values.at("--server") + ": PlanStream: no plan");
  return *plan;
}

}  // namespace

int cmdPlan(int argc, char** argv) {
  const Args a = parseArgs(argc, argv, 2, {"--model",         "--scene",
                                           "--planner",       "--goal",
                                           "--start",         "--time-limit",
                                           "--seed",          "--rate",
                                           "--step",          "--param",
                                           "--roadmap",       "--roadmap-vertices",
                                           "--out",           "--inputs-csv",
                                           "--server",        "--token-file",
                                           "--tls-ca",        "--settle",
                                           "--optimize-time", "--optimizer", "--weight",
                                           "--margin",        "--max-propagations",
                                           "--plugin",        "--optimize-iterations"},
                           {"--quiet", "--optimize", "--raw", "--gains"});
  loadPlugins(a);
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
  if (a.values.count("--start"))
    applyStartText(*req.model, parseStartText(a.values.at("--start")), req);
  if (a.values.count("--time-limit"))
    opt.time_limit_s = parseNumber("--time-limit", a.values.at("--time-limit"));
  if (a.values.count("--max-propagations"))
    opt.max_propagations = static_cast<long>(
        wholeNumber("--max-propagations", a.values.at("--max-propagations"), 0, 1e10));
  if (a.values.count("--seed")) {
    opt.seed = static_cast<unsigned long>(wholeNumber("--seed", a.values.at("--seed"), 0, 4e9));
  }
  if (a.values.count("--rate")) opt.output_rate_hz = parseNumber("--rate", a.values.at("--rate"));
  if (a.values.count("--step")) opt.step_s = parseNumber("--step", a.values.at("--step"));
  if (a.all.count("--param")) opt.parameters = parseParams(a.all.at("--param"));
  RoadmapCacheOptions roadmap_files;
  if (a.values.count("--roadmap")) roadmap_files.file = a.values.at("--roadmap");
  RoadmapCache roadmaps(roadmap_files);
  req.roadmaps = &roadmaps;
  if (a.values.count("--roadmap-vertices")) {
    opt.roadmap.vertices = static_cast<int>(
        wholeNumber("--roadmap-vertices", a.values.at("--roadmap-vertices"), 2, 100000));
  }
  const bool quiet = a.switches.count("--quiet");
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
      else if (p.phase == "optimize")
        std::cerr << formatted(" iteration %d, cost %.4g, constraint violation %.3g", p.iteration,
                               p.cost, p.constraint_violation);
      std::cerr << '\n';
    };
  const bool optimize = optimizeUnlessRaw(a);
  const OptimizationOptions optimization = parseOptimizationOptions(a);
  std::optional<OptimizationReport> optimized;
  const bool remote = a.values.count("--server");
  const bool gains = a.switches.count("--gains");
  // The feedback gains along the plan with default weights (a server computes them itself).
  std::string no_gains = "no plan";
  Plan plan;
  if (remote) {
    plan = planRemote(a, req, progress, optimize ? &optimization : nullptr, &optimized, gains);
  } else {
    PipelineOptions pipeline;
    if (optimize) pipeline.optimization = optimization;
    if (gains) pipeline.gains = control::LqrWeights{};
    PipelineResult result = runPipeline(req, pipeline, progress);
    if (result.optimized) optimized = result.optimized->report;
    if (!result.no_gains.empty()) no_gains = result.no_gains;
    plan = result.optimized ? std::move(result.optimized->plan) : std::move(result.plan);
  }
  if (a.values.count("--out") && plan.samples() > 0)
    writeFileAtomically(a.values.at("--out"), [&](std::ostream& os) { writePlanJson(plan, os); });
  if (a.values.count("--inputs-csv") && plan.samples() > 0)
    writeFileAtomically(a.values.at("--inputs-csv"),
                        [&](std::ostream& os) { writeInputsCsv(plan, os); });
  printSummary(plan, std::cout);
  if (optimized) printOptimization(*optimized, std::cout);
  if (gains)
    std::cout << (plan.gains.empty() ? "  no feedback gains (" + no_gains + ")\n"
                                     : formatted("  feedback gains: %zu steps at %g Hz\n",
                                                 plan.gains.K.size(), plan.rate_hz));
  switch (plan.outcome) {
    case PlanOutcome::Exact: return 0;
    case PlanOutcome::Approximate: return 4;
    case PlanOutcome::NotFound: return 5;
  }
  return 5;
}

int cmdOptimize(int argc, char** argv) {
  // The motion: a plan file, the first argument (its model, scene, start and goal unless
  // given), or a CSV.
  std::vector<char*> rest;
  const std::string plan_path = takePositional(argc, argv, rest);
  const Args a =
      parseArgs(static_cast<int>(rest.size()), rest.data(), 2,
                {"--model", "--scene", "--inputs", "--goal", "--start", "--rate", "--out",
                 "--inputs-csv", "--settle", "--optimize-time", "--optimize-iterations",
                 "--optimizer", "--weight", "--margin"},
                {"--quiet"});
  if (!plan_path.empty() && a.values.count("--inputs"))
    throw std::invalid_argument("optimize takes PLAN.json or --inputs FILE.csv, not both");
  if (!a.values.count("--out")) throw std::invalid_argument("optimize needs --out BETTER.json");
  PlanRequest req;
  Eigen::MatrixXd inputs;
  double rate_hz = 0.0;
  std::string goal_text, start_text, planner = "given";
  unsigned long seed = 0;
  if (!plan_path.empty()) {
    const Plan given = readPlanFile(plan_path);
    const std::string model = a.values.count("--model") ? a.values.at("--model") : given.model;
    try {
      req.model = loadModel(model);
    } catch (const std::exception& e) {
      throw std::invalid_argument(plan_path + ": model: '" + model + "': " + e.what() +
                                  " (give the model file with --model)");
    }
    req.scene = loadScene(a.values.count("--scene") ? a.values.at("--scene")
                          : given.scene.empty()     ? "empty"
                                                    : given.scene);
    inputs = given.inputs;
    rate_hz = given.rate_hz;
    goal_text = given.goal;
    start_text = given.start;
    planner = given.stats.planner;
    seed = given.seed;
  } else {
    if (!a.values.count("--model"))
      throw std::invalid_argument(a.values.count("--inputs") ? "--inputs needs --model"
                                                             : "optimize needs PLAN.json, or "
                                                               "--model (with --inputs FILE.csv "
                                                               "or a straight-line guess)");
    req.model = loadModel(a.values.at("--model"));
    req.scene = loadScene(a.values.count("--scene") ? a.values.at("--scene") : "empty");
    rate_hz = a.values.count("--rate") ? parseNumber("--rate", a.values.at("--rate")) : 50.0;
  }
  if (plan_path.empty() && !a.values.count("--inputs")) {
    // A straight-line guess: the start's inputs held 2 s.  The optimizer's own starts then
    // include straight lines in input space to a rest pose at the goal.
    planner = "straight line";
  } else if (plan_path.empty()) {
    const InputSchedule csv = InputSchedule::fromCsvFile(*req.model, a.values.at("--inputs"));
    const double end_s = csv.times_s.empty() ? 0.0 : csv.times_s.back();
    const int n = static_cast<int>(std::lround(end_s * rate_hz)) + 1;
    inputs.resize(n, req.model->nk());
    for (int i = 0; i < n; ++i) inputs.row(i) = csv.at(i / rate_hz).transpose();
  }
  if (a.values.count("--goal")) goal_text = a.values.at("--goal");
  if (goal_text.empty()) throw std::invalid_argument("optimize needs --goal (the plan has none)");
  req.goal = GoalSpec::parse(goal_text);
  if (a.values.count("--start")) start_text = a.values.at("--start");
  if (!start_text.empty() && start_text != "rest")
    applyStartText(*req.model, parseStartText(start_text), req);
  const OptimizationOptions options = parseOptimizationOptions(a);
  if (inputs.size() == 0) {
    const Eigen::VectorXd rho0 =
        req.start_inputs.size() ? req.start_inputs : req.model->defaultInputs();
    inputs = rho0.transpose().replicate(static_cast<int>(std::lround(2.0 * rate_hz)) + 1, 1);
  }

  Plan before = verifyMotion(req, inputs, rate_hz);
  before.stats.planner = planner;  // the optimized plan keeps where it came from
  before.seed = seed;
  const bool quiet = a.switches.count("--quiet");
  if (!quiet) {
    std::cout << "given:\n";
    printSummary(before, std::cout);
  }
  if (before.outcome == PlanOutcome::NotFound) {
    std::cerr << "marionette optimize: " << before.message << "\n";
    return 5;
  }
  const OptimizedPlan better = optimizePlan(req, before, options);
  writeFileAtomically(a.values.at("--out"),
                      [&](std::ostream& os) { writePlanJson(better.plan, os); });
  if (a.values.count("--inputs-csv"))
    writeFileAtomically(a.values.at("--inputs-csv"),
                        [&](std::ostream& os) { writeInputsCsv(better.plan, os); });
  if (!quiet) std::cout << "optimized:\n";
  printSummary(better.plan, std::cout);
  printOptimization(better.report, std::cout);
  return better.plan.outcome == PlanOutcome::Exact ? 0 : 4;
}

}  // namespace marionette::cli
