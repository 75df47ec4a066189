// SPDX-License-Identifier: BSD-3-Clause
// Writing plan files (docs/plan-format.md) and inputs CSV.
#include <cmath>
#include <iomanip>
#include <string>
#include <utility>

#include "marionette/common/json_text.hpp"
#include "marionette/plan/plan_file.hpp"

namespace marionette {
namespace {

// A plan file's object members: JsonMembers with Eigen's vectors and matrices, and times.
class Members : public JsonMembers {
 public:
  using JsonMembers::JsonMembers;
  // The time of a sample (s), or null for none (-1).
  void time(const char* name, int sample, double rate_hz) {
    number(name, sample >= 0 ? sample / rate_hz : NAN);
  }
  void vector(const char* name, const Eigen::VectorXd& v) {
    numbers(name, v.data(), static_cast<std::size_t>(v.size()));
  }
  // One row per line, indented under the member.
  void rows(const char* name, const Eigen::MatrixXd& m, const char* indent) {
    std::ostream& os = key(name);
    os << "[";
    for (int i = 0; i < m.rows(); ++i) {
      os << (i ? ",\n" : "\n") << indent << "  [";
      for (int j = 0; j < m.cols(); ++j) writeJsonNumber(os << (j ? ", " : ""), m(i, j));
      os << ']';
    }
    os << (m.rows() ? "\n" : "") << (m.rows() ? indent : "") << "]";
  }
};

// "tracking": {"kinematic": {POINT: {rms_m, max_m, max_at_s}}, "dynamic": {...},
//              "unreachable": [{point, from_s, to_s, worst_m, reason}],
//              "retarget": {POINT: {...}}, "retarget_spans": [{...}],
//              "variables": {NAME: {rms_m, max_m, max_at_s}} (in the variable's unit),
//              "untargeted": {POINT: {...}} (from where it hangs at the start)}
void writeTracking(Members& top, std::ostream& os, const TargetTracking& tracking) {
  top.key("tracking") << "{\n    ";
  Members sections(os, ",\n    ");
  auto points = [&](const char* name, const std::vector<PointTracking>& list) {
    sections.key(name) << '{';
    Members each(os, ", ");
    for (const PointTracking& p : list) {
      each.key(p.point) << '{';
      Members fields(os, ", ");
      fields.number("rms_m", p.rms_m);
      fields.number("max_m", p.max_m);
      fields.number("max_at_s", p.max_at_s);
      os << '}';
    }
    os << '}';
  };
  auto spans = [&](const char* name, const std::vector<UnreachableSpan>& list) {
    sections.key(name) << '[';
    for (std::size_t i = 0; i < list.size(); ++i) {
      const UnreachableSpan& u = list[i];
      os << (i ? ",\n      {" : "\n      {");
      Members fields(os, ", ");
      fields.text("point", u.point);
      fields.number("from_s", u.from_s);
      fields.number("to_s", u.to_s);
      fields.number("worst_m", u.worst_m);
      fields.text("reason", u.reason);
      os << '}';
    }
    os << (list.empty() ? "]" : "\n    ]");
  };
  points("kinematic", tracking.kinematic);
  points("dynamic", tracking.dynamic);
  spans("unreachable", tracking.unreachable);
  points("retarget", tracking.retarget);
  spans("retarget_spans", tracking.retarget_spans);
  points("variables", tracking.variables);
  points("untargeted", tracking.untargeted);
  os << "\n  }";
}

}  // namespace

void writePlanJson(const Plan& plan, std::ostream& os) {
  // 17 significant digits: every number read back is the double that was written, so the
  // inputs a reader plays are exactly the ones that were verified.
  os << std::setprecision(17) << "{\n  ";
  Members top(os, ",\n  ");
  top.text("format", "marionette-plan");
  top.key("version") << 1;
  top.text("model", plan.model);
  top.text("scene", plan.scene);
  top.text("planner", plan.stats.planner);
  top.key("seed") << plan.seed;
  top.text("start", plan.start);
  top.text("goal", plan.goal);
  top.text("outcome", toString(plan.outcome));
  top.text("message", plan.message);
  top.time("goal_reached_at_s", plan.goal_sample, plan.rate_hz);
  top.number("goal_distance", plan.goal_distance_min);
  top.key("collision_free") << (plan.collision_free ? "true" : "false");
  top.time("first_collision_s", plan.first_collision, plan.rate_hz);
  top.text("collision_pair", plan.collision_pair);
  top.number("min_clearance_m", plan.min_clearance_m);
  top.number("min_stage_clearance_m", plan.min_stage_clearance_m);
  top.time("min_stage_clearance_at_s", plan.min_stage_clearance_sample, plan.rate_hz);
  top.number("clearance_margin_m", plan.clearance_margin_m);
  top.number("max_string_violation_m", plan.max_violation_m);
  top.number("min_tension_N", plan.min_tension_N);
  top.names("limit_violations", plan.limit_violations);

  const PlanStatistics& s = plan.stats;
  top.key("statistics") << '{';
  Members stats(os, ", ");
  stats.number("planning_time_s", s.planning_time_s);
  stats.number("verification_time_s", s.verification_time_s);
  stats.number("total_time_s", s.total_time_s);
  stats.key("propagations") << s.propagations;
  stats.key("collision_checks") << s.collision_checks;
  stats.key("tree_states") << s.tree_states;
  stats.key("roadmap_vertices") << s.roadmap_vertices;
  stats.key("roadmap_edges") << s.roadmap_edges;
  stats.key("edges_validated") << s.edges_validated;
  stats.key("edges_rejected") << s.edges_rejected;
  stats.number("roadmap_build_time_s", s.roadmap_build_time_s);
  stats.number("planner_goal_distance", s.best_goal_distance);
  os << '}';

  if (plan.quality.measured) {
    const PlanQuality& q = plan.quality;
    top.key("quality") << "{\n    ";
    Members quality(os, ",\n    ");
    quality.number("duration_s", q.duration_s);
    quality.vector("input_jerk_rms", q.input_jerk_rms);
    quality.number("input_jerk_rms_overall", q.input_jerk_rms_overall);
    quality.key("string_catches") << q.string_catches;
    quality.key("snaps") << q.snaps;
    quality.text("first_snap_string", q.first_snap_string);
    quality.number("first_snap_t_s", q.first_snap_t_s);
    quality.number("peak_tension_ratio", q.peak_tension_ratio);
    quality.text("peak_tension_string", q.peak_tension_string);
    quality.number("peak_tension_t_s", q.peak_tension_t_s);
    quality.number("settle_s", q.settle_s);
    quality.number("residual_kinetic_energy_J", q.residual_kinetic_energy_J);
    quality.number("residual_joint_speed_rms", q.residual_joint_speed_rms);
    quality.text("swing_joint", q.swing_joint);
    quality.number("swing_joint_speed_rms", q.swing_joint_speed_rms);
    os << "\n  }";
  }

  top.key("inputs") << "{\n    ";
  Members inputs(os, ",\n    ");
  inputs.number("rate_hz", plan.rate_hz);
  inputs.number("duration_s", plan.duration_s());
  inputs.names("names", plan.input_names);
  inputs.rows("samples", plan.inputs, "    ");
  os << "\n  }";

  top.key("predicted") << "{\n    ";
  Members predicted(os, ",\n    ");
  predicted.names("state_names", plan.predicted.state_names);
  predicted.names("string_names", plan.predicted.string_names);
  predicted.rows("states", plan.predicted.states, "    ");
  predicted.rows("tensions_N", plan.predicted.tensions_N, "    ");
  predicted.vector("clearance_m", plan.predicted.clearance_m);
  predicted.vector("stage_clearance_m", plan.predicted.stage_clearance_m);
  predicted.vector("goal_distance", plan.predicted.goal_distance);
  if (!plan.predicted.point_names.empty()) {
    predicted.names("point_names", plan.predicted.point_names);
    predicted.rows("points", plan.predicted.points_m, "    ");
  }
  if (!plan.predicted.contact_names.empty()) {
    predicted.names("contact_names", plan.predicted.contact_names);
    predicted.rows("contact_normal_N", plan.predicted.contact_normal_N, "    ");
    predicted.rows("contact_friction_N", plan.predicted.contact_friction_N, "    ");
  }
  os << "\n  }";

  if (!plan.performance.targets.points.empty() || !plan.performance.targets.variables.empty()) {
    top.key("targets") << "{\n    ";
    Members targets(os, ",\n    ");
    targets.text("source", plan.performance.targets.source);
    targets.names("names", plan.performance.targets.points);
    targets.rows("samples", plan.performance.targets.positions_m, "    ");
    if (!plan.performance.targets.variables.empty()) {
      targets.names("variable_names", plan.performance.targets.variables);
      targets.rows("variables", plan.performance.targets.values, "    ");
    }
    os << "\n  }";
  }
  if (!plan.performance.tracking.empty()) writeTracking(top, os, plan.performance.tracking);

  if (!plan.gains.empty()) {
    const control::TrackingGains& g = plan.gains;
    const Eigen::Index rows = g.K[0].rows(), cols = g.K[0].cols();
    top.key("gains") << "{\n    ";
    Members gains(os, ",\n    ");
    gains.number("rate_hz", 1.0 / g.dt_s);
    gains.key("weights") << '{';
    Members weights(os, ", ");
    for (const auto& [name, value] : control::weightFields(g.weights)) weights.number(name, value);
    os << '}';
    gains.text("state", "q (predicted.state_names), p (n_d), rho (inputs.names), the previous rho");
    gains.key("rows") << rows;
    gains.key("cols") << cols;
    // One gain a line, row-major; 9 significant digits are plenty for a feedback gain.
    Eigen::MatrixXd flat(static_cast<Eigen::Index>(g.K.size()), rows * cols);
    for (std::size_t k = 0; k < g.K.size(); ++k)
      flat.row(static_cast<Eigen::Index>(k)) =
          Eigen::Map<const Eigen::RowVectorXd>(Eigen::MatrixXd(g.K[k].transpose()).data(),
                                               rows * cols);
    const std::streamsize precision = os.precision(9);
    gains.rows("K", flat, "    ");
    os.precision(precision);
    os << "\n  }";
  }
  os << "\n}\n";
}

void writeInputsCsv(const Plan& plan, std::ostream& os) {
  os << 't';
  for (const auto& n : plan.input_names) os << ',' << n;
  os << '\n' << std::setprecision(17);  // exact, as the plan file
  for (int i = 0; i < plan.samples(); ++i) {
    os << i / plan.rate_hz;
    for (int j = 0; j < plan.inputs.cols(); ++j) os << ',' << plan.inputs(i, j);
    os << '\n';
  }
}

}  // namespace marionette
