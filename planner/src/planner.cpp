#include "marionette/planner/planner.hpp"

#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "marionette/common/clock.hpp"
#include "marionette/models/input_limits.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/common/json_text.hpp"
#include "marionette/models/rest_pose.hpp"
#include "ompl_planning.hpp"

namespace marionette {

const std::vector<std::string>& plannerNames() {
  static const std::vector<std::string> names = {"est", "kpiece", "rrt", "sst", "pdst", "prm"};
  return names;
}

std::map<std::string, std::string> plannerParameters(const std::string& planner) {
  if (detail::isTreePlanner(planner)) return detail::treePlannerParameters(planner);
  if (planner == "prm") return {};
  throw std::invalid_argument("unknown planner '" + planner + "'");
}

namespace {

// Roadmaps kept for the life of the process, per (model, scene, options) fingerprint: the 16
// used most recently (a server asked for many inline models must not grow without bound).
std::shared_ptr<RestPoseRoadmap> cachedRoadmap(const std::string& key,
                                               std::shared_ptr<RestPoseRoadmap> put = nullptr) {
  constexpr std::size_t kKept = 16;
  struct Entry {
    std::shared_ptr<RestPoseRoadmap> roadmap;
    unsigned long last_use = 0;
  };
  static std::mutex mutex;
  static std::map<std::string, Entry> cache;
  static unsigned long uses = 0;
  std::lock_guard<std::mutex> lock(mutex);
  if (put) {
    if (!cache.count(key) && cache.size() >= kKept) {
      auto oldest = cache.begin();
      for (auto it = cache.begin(); it != cache.end(); ++it)
        if (it->second.last_use < oldest->second.last_use) oldest = it;
      cache.erase(oldest);
    }
    cache[key].roadmap = put;
  }
  const auto it = cache.find(key);
  if (it == cache.end()) return nullptr;
  it->second.last_use = ++uses;
  return it->second.roadmap;
}

bool fileExists(const std::string& path) {
  return std::ifstream(path).good();
}

// Re-simulates the sampled inputs at the output rate from the request's start and re-checks
// every sample: collisions, clearance, limits, the goal.  Fills the plan's predicted part.
void verify(const PlanRequest& req, const CollisionModelPtr& collision, Plan& plan) {
  const Model& model = *req.model;
  const int n = plan.samples(), nd = model.nd(), ns = model.nstrings();
  InputSchedule schedule;
  schedule.defaults = plan.inputs.row(0).transpose();
  schedule.values = plan.inputs;
  schedule.times_s.resize(n);
  for (int i = 0; i < n; ++i) schedule.times_s[i] = i / plan.rate_hz;
  SimulationOptions so;
  so.dt_s = 1.0 / plan.rate_hz;
  so.duration_s = (n - 1) * so.dt_s;
  so.start = req.start;
  plan.states.resize(n, nd);
  plan.tensions_N.resize(n, ns);
  plan.clearance_m.resize(n);
  plan.stage_clearance_m.resize(n);
  plan.goal_distance.resize(n);
  CollisionChecker checker(collision);
  GoalEvaluator goal(req.model, req.goal);
  Eigen::VectorXd q_prev, rho_prev, qdot(nd), rhodot(model.nk());
  int row_index = 0;
  plan.collision_free = true;
  plan.min_tension_N = ns ? std::numeric_limits<double>::infinity() : 0.0;
  auto on_row = [&](const SimulationRow& row) {
    const int i = row_index++;
    if (i >= n) return;
    plan.states.row(i) = row.q->transpose();
    plan.tensions_N.row(i) = row.tension_N->transpose();
    if (ns) plan.min_tension_N = std::min(plan.min_tension_N, row.tension_N->minCoeff());
    plan.max_violation_m = std::max(plan.max_violation_m, row.max_violation_m);
    const Eigen::VectorXd q = model.configuration(*row.q, *row.rho);
    const ClearanceResult c = checker.clearance(q);
    plan.clearance_m[i] = c.distance_m;
    plan.stage_clearance_m[i] = c.stage_distance_m;
    if (c.in_collision && plan.collision_free) {
      plan.collision_free = false;
      plan.first_collision = i;
      plan.collision_pair = c.pair.describe();
    }
    if (c.distance_m < plan.min_clearance_m) plan.min_clearance_m = c.distance_m;
    if (c.stage_distance_m < plan.min_stage_clearance_m) {
      plan.min_stage_clearance_m = c.stage_distance_m;
      plan.min_stage_clearance_sample = i;
    }
    // Velocities of the step that ended here (the VI's own step velocity).
    if (i == 0) {
      qdot.setZero();
      rhodot.setZero();
    } else {
      qdot = (*row.q - q_prev) * plan.rate_hz;
      rhodot = (*row.rho - rho_prev) * plan.rate_hz;
    }
    q_prev = *row.q;
    rho_prev = *row.rho;
    const GoalEvaluator::Measure m = goal.measure(*row.q, *row.rho, qdot, rhodot);
    plan.goal_distance[i] = m.distance;
    plan.goal_distance_min = std::min(plan.goal_distance_min, m.distance);
    if (m.satisfied && plan.goal_sample < 0) plan.goal_sample = i;
  };
  simulate(req.model, schedule, so, on_row);
  for (const LimitViolation& v : checkInputLimits(model, plan.inputs, plan.rate_hz))
    plan.limit_violations.push_back(v.describe());
}

}  // namespace

Plan planMotion(const PlanRequest& req, const ProgressFn& progress, const CancelFn& cancelled) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!req.model) throw std::invalid_argument("model: none given");
  const Model& model = *req.model;
  const PlannerOptions& opt = req.options;
  const auto& names = plannerNames();
  if (std::find(names.begin(), names.end(), opt.planner) == names.end())
    throw std::invalid_argument("planner: unknown '" + opt.planner +
                                "' (expected est, kpiece, rrt, sst, pdst or prm)");
  if (!(opt.time_limit_s > 0.0) || !std::isfinite(opt.time_limit_s))
    throw std::invalid_argument("time limit: must be > 0 s");
  if (!(opt.rate_hz >= 1.0 && opt.rate_hz <= 1000.0))
    throw std::invalid_argument("rate: must be within [1, 1000] Hz");
  if (!(opt.step_s >= 1e-3 && opt.step_s <= 0.1))
    throw std::invalid_argument("step: must be within [0.001, 0.1] s");
  if (opt.planner == "prm" && !opt.params.empty())
    throw std::invalid_argument("planner 'prm' takes no OMPL parameters (got '" +
                                opt.params.begin()->first + "'); see RoadmapOptions");

  CollisionModelPtr collision = req.collision;
  if (!collision) {
    ScenePtr scene = req.scene ? req.scene : loadScene("empty");
    collision = std::make_shared<CollisionModel>(req.model, scene);
  }
  Eigen::VectorXd rho0 = req.start_inputs.size() ? req.start_inputs : model.defaultInputs();
  if (rho0.size() != model.nk())
    throw std::invalid_argument("start inputs: expected " + std::to_string(model.nk()) +
                                " values, got " + std::to_string(rho0.size()));
  for (int i = 0; i < model.nk(); ++i) {
    const KinematicVariable& kv = model.kinematic[i];
    if (!std::isfinite(rho0[i]) || rho0[i] < kv.lower || rho0[i] > kv.upper)
      throw std::invalid_argument("start inputs: " + kv.name + " = " + std::to_string(rho0[i]) +
                                  " is outside its range");
  }
  GoalEvaluator goal_check(req.model, req.goal);  // validates the goal early; prm queries use it
  const StartState start = resolveStart(req.model, rho0, req.start);
  {
    CollisionChecker checker(collision);
    const CollisionResult c = checker.inCollision(model.configuration(start.q, rho0));
    if (c.in_collision)
      throw std::invalid_argument("start: in collision (" + c.pair.describe() + ")");
  }

  Plan plan;
  plan.model = model.name;
  plan.scene = collision->scene().name;
  plan.goal = req.goal.describe();
  plan.start = req.start_text;
  plan.seed = opt.seed;
  plan.rate_hz = opt.rate_hz;
  for (const auto& v : model.kinematic) plan.input_names.push_back(v.name);
  for (const auto& v : model.dynamic) plan.state_names.push_back(v.name);
  for (const auto& s : model.strings) plan.string_names.push_back(s.name);
  plan.stats.planner = opt.planner;

  RigTrajectory inputs;
  bool found = false;
  if (detail::isTreePlanner(opt.planner)) {
    const detail::SearchResult r = detail::searchTree(req, collision, start.q, start.qdot, rho0,
                                                      req.goal, progress, cancelled);
    plan.stats.planning_time_s = r.time_s;
    plan.stats.propagations = r.propagations;
    plan.stats.collision_checks = r.collision_checks;
    plan.stats.tree_states = r.tree_states;
    plan.stats.best_goal_distance = r.goal_distance;
    plan.message = r.message;
    found = r.found;
    inputs = r.inputs;
  } else {
    // prm: the roadmap for this (model, scene, options), from memory, a file, or built now.
    RoadmapOptions ro = opt.roadmap;
    ro.step_s = opt.step_s;
    // Keyed by the file too: a file is loaded (and checked against the model and scene) the
    // first time it is named; after that this process's copy is the file's latest content.
    const std::string key =
        RestPoseRoadmap::fingerprint(*collision) + "|" + ro.describe() + "|" + opt.roadmap_file;
    // Memory first (a server answers many queries), then the file, else built now.
    std::shared_ptr<RestPoseRoadmap> roadmap = cachedRoadmap(key);
    if (!roadmap && !opt.roadmap_file.empty() && fileExists(opt.roadmap_file)) {
      roadmap = RestPoseRoadmap::load(opt.roadmap_file, collision);
      cachedRoadmap(key, roadmap);
    } else if (!roadmap) {
      roadmap = RestPoseRoadmap::build(
          collision, ro,
          [&](int vertices, double elapsed) {
            if (!progress) return;
            PlanProgress p;
            p.phase = "roadmap";
            p.elapsed_s = elapsed;
            p.states = vertices;
            progress(p);
          },
          cancelled);
      plan.stats.roadmap_build_time_s = roadmap->buildTime_s();
      cachedRoadmap(key, roadmap);
    }
    const auto tq = std::chrono::steady_clock::now();
    RestPoseRoadmap::QueryResult r = roadmap->query(start.q, start.qdot, rho0, goal_check,
                                                    opt.time_limit_s, opt.seed, cancelled);
    plan.stats.planning_time_s = secondsSince(tq);
    // Saved after the query too, so that the edges it checked are remembered.
    if (!opt.roadmap_file.empty()) roadmap->save(opt.roadmap_file);
    plan.stats.roadmap_vertices = static_cast<long>(roadmap->vertices().size());
    plan.stats.roadmap_edges = static_cast<long>(roadmap->edges().size());
    plan.stats.edges_validated = r.edges_validated;
    plan.stats.edges_rejected = r.edges_rejected;
    plan.stats.propagations = r.propagations;
    plan.stats.collision_checks = r.collision_checks;
    plan.stats.best_goal_distance = r.goal_distance;
    plan.message = r.message;
    found = r.found;
    inputs = std::move(r.inputs);
  }

  if (!found || (cancelled && cancelled())) {
    // Cancelled: whatever was found is not verified (that would take another re-simulation).
    if (found) plan.message = "cancelled before verification";
    plan.outcome = PlanOutcome::NotFound;
    plan.stats.total_time_s = secondsSince(t0);
    return plan;
  }
  // Resample at the output rate, re-simulate, re-check (DESIGN §6).
  const auto tv = std::chrono::steady_clock::now();
  if (progress) {
    PlanProgress p;
    p.phase = "verify";
    p.elapsed_s = secondsSince(t0);
    progress(p);
  }
  plan.inputs = inputs.resample(opt.rate_hz);
  try {
    verify(req, collision, plan);
  } catch (const std::exception& e) {
    plan.outcome = PlanOutcome::NotFound;
    plan.message = std::string("the re-simulation of the plan failed: ") + e.what();
    plan.stats.total_time_s = secondsSince(t0);
    return plan;
  }
  plan.stats.verification_time_s = secondsSince(tv);
  if (plan.collision_free && plan.goal_sample >= 0 && plan.limit_violations.empty()) {
    plan.outcome = PlanOutcome::Exact;
    plan.message.clear();
  } else {
    plan.outcome = PlanOutcome::Approximate;
    std::ostringstream why;
    if (!plan.collision_free)
      why << "collision at t=" << plan.first_collision / plan.rate_hz << " s ("
          << plan.collision_pair << ")";
    else if (!plan.limit_violations.empty())
      why << "input limits: " << plan.limit_violations.front();
    else
      why << "goal not reached: closest " << plan.goal_distance_min << " (tolerance "
          << req.goal.effectiveTolerance() << ")";
    plan.message = why.str();
  }
  plan.stats.total_time_s = secondsSince(t0);
  return plan;
}

}  // namespace marionette
