// SPDX-License-Identifier: BSD-3-Clause
// The registry: the built-in planners first (OMPL's control planners with the table's goal bias,
// and the rest-pose roadmap), then those registered by programs and plugins.
#include "marionette/search/registry.hpp"

#include <ompl/control/planners/est/EST.h>
#include <ompl/control/planners/kpiece/KPIECE1.h>
#include <ompl/control/planners/pdst/PDST.h>
#include <ompl/control/planners/rrt/RRT.h>
#include <ompl/control/planners/sst/SST.h>

#include <mutex>

#include "marionette/common/text.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/search/search_space.hpp"
#include "planner_parameters.hpp"
#include "scaled_nearest.hpp"
#include "seeding.hpp"

namespace marionette {
namespace {

// OMPL's control planner P with the entry's goal bias.
template <class P>
std::shared_ptr<ompl::base::Planner> make(const TreeSearchSpace& space, const PlannerInfo& info) {
  auto p = std::make_shared<P>(space.spaceInformation());
  p->setGoalBias(info.goal_bias);
  return p;
}

struct Entry {
  PlannerInfo info;
  TreePlannerFactory make;  // empty for the roadmap
};

PlannerInfo builtIn(std::string name, SearchKind kind, std::string log_name, std::string source,
                    int max_control_steps = 15, double point_cell_m = 0.05) {
  PlannerInfo p;
  p.name = std::move(name);
  p.kind = kind;
  p.log_name = std::move(log_name);
  p.source = std::move(source);
  p.max_control_steps = max_control_steps;
  p.point_cell_m = point_cell_m;
  return p;
}

struct Registry {
  std::mutex mutex;
  std::vector<Entry> entries;
  Registry() {
    // KPIECE holds controls longer (up to 50 steps) over a finer grid (3 cm): measured on arm3d
    // behind the pillars (docs/benchmarks.md), where EST and PDST do worse with either.
    entries = {
        {builtIn("est", SearchKind::Tree, "control_EST",
                 "EST (Hsu, Latombe & Motwani, IJCGA 1999), with the goal bias of Johnson & "
                 "Murphey, ICRA 2007"),
         make<ompl::control::EST>},
        {builtIn("kpiece", SearchKind::Tree, "control_KPIECE1",
                 "KPIECE (Sucan & Kavraki, WAFR 2008)", 50, 0.03),
         make<ompl::control::KPIECE1>},
        {builtIn("rrt", SearchKind::Tree, "control_RRT",
                 "kinodynamic RRT (LaValle & Kuffner, IJRR 2001)"),
         make<detail::ScaledNearestRRT>},
        {builtIn("sst", SearchKind::Tree, "control_SST", "SST (Li, Littlefield & Bekris, IJRR 2016)"),
         make<detail::ScaledNearestSST>},
        {builtIn("pdst", SearchKind::Tree, "control_PDST", "PDST (Ladd & Kavraki, WAFR 2004)"),
         make<ompl::control::PDST>},
        {builtIn("prm", SearchKind::Roadmap, "marionette_RestPosePRM",
                 "a roadmap over rest poses (after Esteves, Arechavaleta & Laumond, ICMA 2005)"),
         nullptr},
    };
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

std::optional<Entry> findEntry(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const Entry& e : r.entries)
    if (e.info.name == name) return e;
  return std::nullopt;
}

Entry requireEntry(const std::string& name) {
  std::optional<Entry> e = findEntry(name);
  if (!e)
    throw FieldError("options.planner",
                     "unknown '" + name + "' (expected " + joinNames(plannerNames()) + ")");
  return *e;
}

bool allowedName(const std::string& name) {
  if (name.empty() || name.size() > 40) return false;
  for (const char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  return true;
}

// A small problem (planar-arm on the empty stage) on which planners are made to list and try
// their parameters; made once.
const TreeSearchSpace& throwawaySpace() {
  static const std::unique_ptr<TreeSearchSpace> space = [] {
    TreeSearchProblem p;
    const ModelPtr model = loadModel("planar-arm");
    p.collision = std::make_shared<CollisionModel>(model, loadScene("empty"));
    p.q0 = Eigen::VectorXd::Zero(model->nd());
    p.qdot0 = Eigen::VectorXd::Zero(model->nd());
    p.rho0 = model->defaultInputs();
    p.goal = GoalSpec::parse("q:theta1=0.1");
    return std::make_unique<TreeSearchSpace>(p);
  }();
  return *space;
}

// The planner of `entry` on the throwaway space.  Constructing a planner draws a seed from OMPL's
// process-wide generator: under the same lock as a search's seeding, so that it cannot take a
// search's seed.
std::shared_ptr<ompl::base::Planner> throwawayPlanner(const Entry& entry) {
  std::lock_guard<std::recursive_mutex> lock(detail::omplSeedMutex());
  return entry.make(throwawaySpace(), entry.info);
}

}  // namespace

void registerPlanner(PlannerInfo info, TreePlannerFactory make) {
  if (!allowedName(info.name))
    throw FieldError("planner.name", "'" + info.name.substr(0, 60) +
                                         "' is not a planner name (1 to 40 of a-z, 0-9, '-', '_')");
  if (info.kind != SearchKind::Tree)
    throw FieldError("planner.kind", "only tree planners (OMPL control planners) can be registered");
  if (!make) throw FieldError("planner.factory", "empty");
  if (!(info.max_control_steps >= 2 && info.max_control_steps <= 1000))
    throw FieldError("planner.max_control_steps", "must be within [2, 1000]");
  if (!(info.point_cell_m > 0 && info.point_cell_m <= 1))
    throw FieldError("planner.point_cell_m", "must be within (0, 1] m");
  if (!(info.goal_states >= 0 && info.goal_states <= 64))
    throw FieldError("planner.goal_states", "must be within [0, 64]");
  if (info.log_name.empty()) info.log_name = "control_" + info.name;
  info.built_in = false;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const Entry& e : r.entries)
    if (e.info.name == info.name)
      throw FieldError("planner.name", "'" + info.name + "' is already registered");
  r.entries.push_back({std::move(info), std::move(make)});
}

std::vector<PlannerInfo> plannerTable() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<PlannerInfo> out;
  for (const Entry& e : r.entries) out.push_back(e.info);
  return out;
}

std::optional<PlannerInfo> findPlanner(const std::string& name) {
  std::optional<Entry> e = findEntry(name);
  if (!e) return std::nullopt;
  return e->info;
}

std::vector<std::string> plannerNames() { return itemNames(plannerTable()); }

TreePlannerFactory treePlannerFactory(const std::string& name) {
  const Entry e = requireEntry(name);
  if (!e.make) throw FieldError("options.planner", "'" + name + "' is not a tree planner");
  return e.make;
}

std::map<std::string, std::string> plannerParameters(const std::string& planner) {
  const Entry e = requireEntry(planner);
  if (e.info.kind == SearchKind::Roadmap) return {};
  std::map<std::string, std::string> out;
  throwawayPlanner(e)->params().getParams(out);
  return out;
}

void checkPlannerParameters(const std::string& planner,
                            const std::map<std::string, std::string>& params) {
  const Entry e = requireEntry(planner);
  if (params.empty()) return;
  if (e.info.kind == SearchKind::Roadmap)
    throw FieldError("options.parameters" + fieldKey(params.begin()->first),
                     "planner '" + planner + "' takes no OMPL parameters");
  detail::applyParameters(*throwawayPlanner(e), planner, params);
}

}  // namespace marionette
