// Writing plan files (docs/plan-format.md) and inputs CSV.
#include <cmath>
#include <iomanip>

#include "marionette/common/json_text.hpp"
#include "marionette/plan/plan_file.hpp"

namespace marionette {
namespace {

void jsonNames(std::ostream& os, const std::vector<std::string>& names) {
  os << '[';
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) os << ", ";
    writeJsonString(os, names[i]);
  }
  os << ']';
}

void jsonRows(std::ostream& os, const Eigen::MatrixXd& m, const char* indent) {
  os << "[";
  for (int i = 0; i < m.rows(); ++i) {
    os << (i ? ",\n" : "\n") << indent << "  [";
    for (int j = 0; j < m.cols(); ++j) {
      if (j) os << ", ";
      writeJsonNumber(os, m(i, j));
    }
    os << ']';
  }
  os << (m.rows() ? "\n" : "") << (m.rows() ? indent : "") << "]";
}

void jsonVector(std::ostream& os, const Eigen::VectorXd& v) {
  os << '[';
  for (int i = 0; i < v.size(); ++i) {
    if (i) os << ", ";
    writeJsonNumber(os, v[i]);
  }
  os << ']';
}

}  // namespace

void writePlanJson(const Plan& plan, std::ostream& os) {
  os << std::setprecision(12);
  os << "{\n  \"format\": \"marionette-plan\",\n  \"version\": 1,\n";
  os << "  \"model\": ";
  writeJsonString(os, plan.model);
  os << ",\n  \"scene\": ";
  writeJsonString(os, plan.scene);
  os << ",\n  \"planner\": ";
  writeJsonString(os, plan.stats.planner);
  os << ",\n  \"seed\": " << plan.seed << ",\n  \"start\": ";
  writeJsonString(os, plan.start);
  os << ",\n  \"goal\": ";
  writeJsonString(os, plan.goal);
  os << ",\n  \"outcome\": ";
  writeJsonString(os, toString(plan.outcome));
  os << ",\n  \"message\": ";
  writeJsonString(os, plan.message);
  os << ",\n  \"goal_reached_at_s\": ";
  writeJsonNumber(os, plan.goal_sample >= 0 ? plan.goal_sample / plan.rate_hz : NAN);
  os << ",\n  \"goal_distance\": ";
  writeJsonNumber(os, plan.goal_distance_min);
  os << ",\n  \"collision_free\": " << (plan.collision_free ? "true" : "false");
  os << ",\n  \"first_collision_s\": ";
  writeJsonNumber(os, plan.first_collision >= 0 ? plan.first_collision / plan.rate_hz : NAN);
  os << ",\n  \"collision_pair\": ";
  writeJsonString(os, plan.collision_pair);
  os << ",\n  \"min_clearance_m\": ";
  writeJsonNumber(os, plan.min_clearance_m);
  os << ",\n  \"min_stage_clearance_m\": ";
  writeJsonNumber(os, plan.min_stage_clearance_m);
  os << ",\n  \"min_stage_clearance_at_s\": ";
  writeJsonNumber(os, plan.min_stage_clearance_sample >= 0
                          ? plan.min_stage_clearance_sample / plan.rate_hz
                          : NAN);
  os << ",\n  \"max_string_violation_m\": ";
  writeJsonNumber(os, plan.max_violation_m);
  os << ",\n  \"min_tension_N\": ";
  writeJsonNumber(os, plan.min_tension_N);
  os << ",\n  \"limit_violations\": ";
  jsonNames(os, plan.limit_violations);
  const PlanStatistics& s = plan.stats;
  os << ",\n  \"statistics\": {\"planning_time_s\": " << s.planning_time_s
     << ", \"verification_time_s\": " << s.verification_time_s
     << ", \"total_time_s\": " << s.total_time_s << ", \"propagations\": " << s.propagations
     << ", \"collision_checks\": " << s.collision_checks << ", \"tree_states\": " << s.tree_states
     << ", \"roadmap_vertices\": " << s.roadmap_vertices
     << ", \"roadmap_edges\": " << s.roadmap_edges << ", \"edges_validated\": " << s.edges_validated
     << ", \"edges_rejected\": " << s.edges_rejected
     << ", \"roadmap_build_time_s\": " << s.roadmap_build_time_s << ", \"planner_goal_distance\": ";
  writeJsonNumber(os, s.best_goal_distance);
  os << "},\n  \"inputs\": {\n    \"rate_hz\": " << plan.rate_hz
     << ",\n    \"duration_s\": " << plan.duration_s() << ",\n    \"names\": ";
  jsonNames(os, plan.input_names);
  os << ",\n    \"samples\": ";
  jsonRows(os, plan.inputs, "    ");
  os << "\n  },\n  \"predicted\": {\n    \"state_names\": ";
  jsonNames(os, plan.state_names);
  os << ",\n    \"string_names\": ";
  jsonNames(os, plan.string_names);
  os << ",\n    \"states\": ";
  jsonRows(os, plan.states, "    ");
  os << ",\n    \"tensions_N\": ";
  jsonRows(os, plan.tensions_N, "    ");
  os << ",\n    \"clearance_m\": ";
  jsonVector(os, plan.clearance_m);
  os << ",\n    \"stage_clearance_m\": ";
  jsonVector(os, plan.stage_clearance_m);
  os << ",\n    \"goal_distance\": ";
  jsonVector(os, plan.goal_distance);
  os << "\n  }\n}\n";
}

void writeInputsCsv(const Plan& plan, std::ostream& os) {
  os << 't';
  for (const auto& n : plan.input_names) os << ',' << n;
  os << '\n' << std::setprecision(12);
  for (int i = 0; i < plan.samples(); ++i) {
    os << i / plan.rate_hz;
    for (int j = 0; j < plan.inputs.cols(); ++j) os << ',' << plan.inputs(i, j);
    os << '\n';
  }
}

}  // namespace marionette
