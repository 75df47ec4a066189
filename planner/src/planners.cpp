// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/planner/planners.hpp"

#include <ompl/control/planners/est/EST.h>
#include <ompl/control/planners/kpiece/KPIECE1.h>
#include <ompl/control/planners/pdst/PDST.h>
#include <ompl/control/planners/rrt/RRT.h>
#include <ompl/control/planners/sst/SST.h>

#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "ompl_planning.hpp"

namespace marionette {

namespace {

// OMPL's control planner P with the table's goal bias.
template <class P>
ompl::base::PlannerPtr make(const ompl::control::SpaceInformationPtr& si, const PlannerInfo& info) {
  auto p = std::make_shared<P>(si);
  p->setGoalBias(info.goal_bias);
  return p;
}

struct Entry {
  PlannerInfo info;
  detail::TreePlannerFactory make;  // nullptr for the roadmap
};

// KPIECE holds controls longer (up to 50 steps) over a finer grid (3 cm): measured on arm3d
// behind the pillars (docs/benchmarks.md), where EST and PDST do worse with either.
const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"est", SearchKind::Tree, "control_EST",
        "EST (Hsu, Latombe & Motwani, IJCGA 1999), with the goal bias of Johnson & Murphey, "
        "ICRA 2007"},
       make<ompl::control::EST>},
      {{"kpiece", SearchKind::Tree, "control_KPIECE1", "KPIECE (Sucan & Kavraki, WAFR 2008)", 50,
        0.03},
       make<ompl::control::KPIECE1>},
      {{"rrt", SearchKind::Tree, "control_RRT", "kinodynamic RRT (LaValle & Kuffner, IJRR 2001)"},
       make<ompl::control::RRT>},
      {{"sst", SearchKind::Tree, "control_SST", "SST (Li, Littlefield & Bekris, IJRR 2016)"},
       make<ompl::control::SST>},
      {{"pdst", SearchKind::Tree, "control_PDST", "PDST (Ladd & Kavraki, WAFR 2004)"},
       make<ompl::control::PDST>},
      {{"prm", SearchKind::Roadmap, "marionette_RestPosePRM",
        "a roadmap over rest poses (after Esteves, Arechavaleta & Laumond, ICMA 2005)"},
       nullptr},
  };
  return table;
}

}  // namespace

const std::vector<PlannerInfo>& plannerTable() {
  static const std::vector<PlannerInfo> table = [] {
    std::vector<PlannerInfo> out;
    for (const Entry& e : entries()) out.push_back(e.info);
    return out;
  }();
  return table;
}

detail::TreePlannerFactory detail::treePlannerFactory(const PlannerInfo& info) {
  for (const Entry& e : entries())
    if (e.info.name == info.name) return e.make;
  return nullptr;
}

const PlannerInfo* findPlanner(const std::string& name) {
  for (const PlannerInfo& p : plannerTable())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> plannerNames() {
  return itemNames(plannerTable());
}

std::map<std::string, std::string> plannerParameters(const std::string& planner) {
  const PlannerInfo* info = findPlanner(planner);
  if (!info)
    throw FieldError("options.planner",
                     "unknown '" + planner + "' (expected " + joinNames(plannerNames()) + ")");
  if (info->kind == SearchKind::Roadmap) return {};
  return detail::treePlannerParameters(*info);
}

}  // namespace marionette
