#include "marionette/planner/planners.hpp"

#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "ompl_planning.hpp"

namespace marionette {

const std::vector<PlannerInfo>& plannerTable() {
  // KPIECE holds controls longer (up to 50 steps) over a finer grid (3 cm): measured on arm3d
  // behind the pillars (docs/benchmarks.md), where EST and PDST do worse with either.
  static const std::vector<PlannerInfo> table = {
      {"est", SearchKind::Tree, "control_EST",
       "EST (Hsu, Latombe & Motwani, IJCGA 1999), with the goal bias of Johnson & Murphey, "
       "ICRA 2007"},
      {"kpiece", SearchKind::Tree, "control_KPIECE1", "KPIECE (Sucan & Kavraki, WAFR 2008)", 50,
       0.03},
      {"rrt", SearchKind::Tree, "control_RRT", "kinodynamic RRT (LaValle & Kuffner, IJRR 2001)"},
      {"sst", SearchKind::Tree, "control_SST", "SST (Li, Littlefield & Bekris, IJRR 2016)"},
      {"pdst", SearchKind::Tree, "control_PDST", "PDST (Ladd & Kavraki, WAFR 2004)"},
      {"prm", SearchKind::Roadmap, "marionette_RestPosePRM",
       "a roadmap over rest poses (after Esteves, Arechavaleta & Laumond, ICMA 2005)"},
  };
  return table;
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
  return detail::treePlannerParameters(planner);
}

}  // namespace marionette
