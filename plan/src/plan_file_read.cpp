// SPDX-License-Identifier: BSD-3-Clause
// Reading plan files back (the format writePlanJson writes; docs/plan-format.md).
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "marionette/common/files.hpp"
#include "marionette/common/yaml_document.hpp"
#include "marionette/plan/plan_file.hpp"

namespace marionette {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Reader {
  const std::string& source;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw PlanFileError(source + ": " + field + ": " + what);
  }

  // A number, or NaN for null (writePlanJson writes null for what is not finite).
  double number(const YAML::Node& n, const std::string& field, bool required = false) const {
    if (!n || n.IsNull()) {
      if (required) fail(field, "missing");
      return kNaN;
    }
    try {
      return n.as<double>();
    } catch (const YAML::Exception&) {
      fail(field, "not a number");
    }
  }

  std::string text(const YAML::Node& n, const std::string& field) const {
    if (!n || n.IsNull()) return "";
    if (!n.IsScalar()) fail(field, "not a string");
    return n.as<std::string>();
  }

  std::vector<std::string> names(const YAML::Node& n, const std::string& field) const {
    if (!n || !n.IsSequence()) fail(field, "missing or not a list of names");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n.size(); ++i)
      out.push_back(text(n[i], field + "[" + std::to_string(i) + "]"));
    return out;
  }

  // rows x cols of finite numbers (or null, read as NaN, when `gaps`); rows < 0: any number of
  // rows.
  Eigen::MatrixXd matrix(const YAML::Node& n, const std::string& field, int rows, int cols,
                         bool gaps = false) const {
    if (!n || !n.IsSequence()) fail(field, "missing or not a list of rows");
    if (rows >= 0 && static_cast<int>(n.size()) != rows)
      fail(field, std::to_string(n.size()) + " rows, expected " + std::to_string(rows) +
                      " (one per input sample)");
    Eigen::MatrixXd m(static_cast<Eigen::Index>(n.size()), cols);
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::string row_field = field + "[" + std::to_string(i) + "]";
      if (!n[i].IsSequence() || static_cast<int>(n[i].size()) != cols)
        fail(row_field, "expected " + std::to_string(cols) + " numbers");
      for (int j = 0; j < cols; ++j) {
        const double v = number(n[i][j], row_field + "[" + std::to_string(j) + "]");
        if (!std::isfinite(v) && !(gaps && std::isnan(v)))
          fail(row_field + "[" + std::to_string(j) + "]", "not a finite number");
        m(static_cast<Eigen::Index>(i), j) = v;
      }
    }
    return m;
  }

  // One number (or null) per sample.
  Eigen::VectorXd column(const YAML::Node& n, const std::string& field, int rows) const {
    if (!n || !n.IsSequence()) fail(field, "missing or not a list of numbers");
    if (static_cast<int>(n.size()) != rows)
      fail(field, std::to_string(n.size()) + " values, expected " + std::to_string(rows));
    Eigen::VectorXd v(rows);
    for (int i = 0; i < rows; ++i) v[i] = number(n[i], field + "[" + std::to_string(i) + "]");
    return v;
  }
};

int sampleAt(double t_s, double rate_hz) {
  const double sample = t_s * rate_hz;
  return std::abs(sample) < 1e9 ? static_cast<int>(std::lround(sample)) : -1;
}

}  // namespace

Plan readPlanJson(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = loadYamlDocument(text, kMaxPlanFileBytes);  // JSON is YAML
  } catch (const YamlDocumentError& e) {
    throw PlanFileError(source + ":" + std::to_string(e.line()) + ": not a plan file (" +
                        (e.field().empty() ? "" : e.field() + ": ") + e.what() +
                        "; is it truncated?)");
  }
  const Reader r{source};
  if (!root.IsMap() || !root["format"] || !root["format"].IsScalar() ||
      root["format"].as<std::string>() != "marionette-plan")
    r.fail("format", "expected \"marionette-plan\" (a file from `marionette plan --out`)");
  Plan plan;
  plan.model = r.text(root["model"], "model");
  if (plan.model.empty()) r.fail("model", "missing");
  plan.scene = r.text(root["scene"], "scene");
  plan.stats.planner = r.text(root["planner"], "planner");
  plan.start = r.text(root["start"], "start");
  plan.goal = r.text(root["goal"], "goal");
  plan.message = r.text(root["message"], "message");
  const std::string outcome = r.text(root["outcome"], "outcome");
  plan.outcome = outcome == "exact"         ? PlanOutcome::Exact
                 : outcome == "approximate" ? PlanOutcome::Approximate
                                            : PlanOutcome::NotFound;
  if (const double seed = r.number(root["seed"], "seed"); std::isfinite(seed)) {
    // A double converts exactly up to 2^53; beyond, the cast was undefined (found by fuzzing).
    if (!(seed >= 0 && seed <= 9007199254740992.0 && seed == std::floor(seed)))
      r.fail("seed", "must be a whole number in [0, 2^53]");
    plan.seed = static_cast<unsigned long>(seed);
  }
  plan.collision_free = root["collision_free"] && root["collision_free"].IsScalar() &&
                        root["collision_free"].as<std::string>() == "true";
  plan.collision_pair = r.text(root["collision_pair"], "collision_pair");
  // Minima over nothing are +inf in a Plan, null in the file.
  const auto minimum = [&](const char* field) {
    const double v = r.number(root[field], field);
    return std::isnan(v) ? std::numeric_limits<double>::infinity() : v;
  };
  plan.goal_distance_min = minimum("goal_distance");
  plan.min_clearance_m = minimum("min_clearance_m");
  plan.min_stage_clearance_m = minimum("min_stage_clearance_m");
  plan.max_violation_m = r.number(root["max_string_violation_m"], "max_string_violation_m");
  if (root["clearance_margin_m"]) {
    plan.clearance_margin_m = r.number(root["clearance_margin_m"], "clearance_margin_m");
    if (!(plan.clearance_margin_m >= 0)) r.fail("clearance_margin_m", "must be a number >= 0");
  }
  plan.min_tension_N = r.number(root["min_tension_N"], "min_tension_N");
  if (root["limit_violations"])
    plan.limit_violations = r.names(root["limit_violations"], "limit_violations");

  const YAML::Node inputs = root["inputs"];
  if (!inputs || !inputs.IsMap()) r.fail("inputs", "missing");
  plan.rate_hz = r.number(inputs["rate_hz"], "inputs.rate_hz", true);
  if (!(plan.rate_hz > 0) || !std::isfinite(plan.rate_hz)) r.fail("inputs.rate_hz", "must be > 0");
  plan.input_names = r.names(inputs["names"], "inputs.names");
  plan.inputs =
      r.matrix(inputs["samples"], "inputs.samples", -1, static_cast<int>(plan.input_names.size()));
  const int n = plan.samples();
  if (n < 1) r.fail("inputs.samples", "empty");
  plan.goal_sample =
      sampleAt(r.number(root["goal_reached_at_s"], "goal_reached_at_s"), plan.rate_hz);
  plan.first_collision =
      sampleAt(r.number(root["first_collision_s"], "first_collision_s"), plan.rate_hz);
  plan.min_stage_clearance_sample = sampleAt(
      r.number(root["min_stage_clearance_at_s"], "min_stage_clearance_at_s"), plan.rate_hz);

  if (const YAML::Node q = root["quality"]; q && q.IsMap()) {
    PlanQuality& out = plan.quality;
    out.measured = true;
    out.duration_s = r.number(q["duration_s"], "quality.duration_s");
    out.input_jerk_rms = r.column(q["input_jerk_rms"], "quality.input_jerk_rms",
                                  static_cast<int>(plan.input_names.size()));
    out.input_jerk_rms_overall =
        r.number(q["input_jerk_rms_overall"], "quality.input_jerk_rms_overall");
    auto count = [&](const char* key, const std::string& field) {
      const double value = r.number(q[key], field);
      if (!(value >= 0 && value <= 1e9 && value == std::floor(value)))
        r.fail(field, "must be a whole number >= 0");
      return static_cast<int>(value);
    };
    out.string_catches = count("string_catches", "quality.string_catches");
    // (Plan files written before snaps were counted have none.)
    if (q["snaps"]) out.snaps = count("snaps", "quality.snaps");
    out.peak_tension_ratio = r.number(q["peak_tension_ratio"], "quality.peak_tension_ratio");
    out.peak_tension_string = r.text(q["peak_tension_string"], "quality.peak_tension_string");
    out.settle_s = r.number(q["settle_s"], "quality.settle_s");
    out.residual_kinetic_energy_J =
        r.number(q["residual_kinetic_energy_J"], "quality.residual_kinetic_energy_J");
    out.residual_joint_speed_rms =
        r.number(q["residual_joint_speed_rms"], "quality.residual_joint_speed_rms");
    // Where it falls short (plan files written before these were measured have none).
    if (q["first_snap_string"]) {
      out.first_snap_string = r.text(q["first_snap_string"], "quality.first_snap_string");
      out.first_snap_t_s = r.number(q["first_snap_t_s"], "quality.first_snap_t_s");
      out.peak_tension_t_s = r.number(q["peak_tension_t_s"], "quality.peak_tension_t_s");
      out.swing_joint = r.text(q["swing_joint"], "quality.swing_joint");
      out.swing_joint_speed_rms =
          r.number(q["swing_joint_speed_rms"], "quality.swing_joint_speed_rms");
    }
  }

  if (const YAML::Node p = root["predicted"]; p && p.IsMap()) {
    plan.predicted.state_names = r.names(p["state_names"], "predicted.state_names");
    plan.predicted.string_names = r.names(p["string_names"], "predicted.string_names");
    plan.predicted.states = r.matrix(p["states"], "predicted.states", n,
                                     static_cast<int>(plan.predicted.state_names.size()));
    plan.predicted.tensions_N = r.matrix(p["tensions_N"], "predicted.tensions_N", n,
                                         static_cast<int>(plan.predicted.string_names.size()));
    plan.predicted.clearance_m = r.column(p["clearance_m"], "predicted.clearance_m", n);
    plan.predicted.stage_clearance_m =
        r.column(p["stage_clearance_m"], "predicted.stage_clearance_m", n);
    plan.predicted.goal_distance = r.column(p["goal_distance"], "predicted.goal_distance", n);
    if (p["point_names"]) {
      plan.predicted.point_names = r.names(p["point_names"], "predicted.point_names");
      plan.predicted.points_m = r.matrix(p["points"], "predicted.points", n,
                                         3 * static_cast<int>(plan.predicted.point_names.size()));
    }
    if (p["contact_names"]) {
      PlanPrediction& out = plan.predicted;
      out.contact_names = r.names(p["contact_names"], "predicted.contact_names");
      const int nc = static_cast<int>(out.contact_names.size());
      out.contact_normal_N = r.matrix(p["contact_normal_N"], "predicted.contact_normal_N", n, nc);
      out.contact_friction_N =
          r.matrix(p["contact_friction_N"], "predicted.contact_friction_N", n, nc);
      for (const auto& [forces, field] :
           {std::pair{&out.contact_normal_N, "predicted.contact_normal_N"},
            std::pair{&out.contact_friction_N, "predicted.contact_friction_N"}})
        if (forces->size() && !(forces->minCoeff() >= 0.0)) r.fail(field, "a force is negative");
    }
  }

  if (const YAML::Node t = root["targets"]; t) {
    if (!t.IsMap()) r.fail("targets", "not an object");
    TargetMotion& out = plan.performance.targets;
    out.source = r.text(t["source"], "targets.source");
    out.points = r.names(t["names"], "targets.names");
    out.positions_m = r.matrix(t["samples"], "targets.samples", -1,
                               3 * static_cast<int>(out.points.size()), true);
    if (out.positions_m.rows() > n) r.fail("targets.samples", "more rows than inputs.samples");
    if (t["variable_names"]) {
      out.variables = r.names(t["variable_names"], "targets.variable_names");
      out.values = r.matrix(t["variables"], "targets.variables",
                            static_cast<int>(out.positions_m.rows()),
                            static_cast<int>(out.variables.size()), true);
    } else {
      out.values.resize(out.positions_m.rows(), 0);
    }
    for (Eigen::Index i = 0; i < out.positions_m.rows(); ++i)
      out.times_s.push_back(static_cast<double>(i) / plan.rate_hz);
  }
  if (const YAML::Node t = root["tracking"]; t) {
    if (!t.IsMap()) r.fail("tracking", "not an object");
    TargetTracking& tracking = plan.performance.tracking;
    for (const auto& [name, into] :
         {std::pair{"kinematic", &tracking.kinematic}, std::pair{"dynamic", &tracking.dynamic},
          std::pair{"retarget", &tracking.retarget}, std::pair{"variables", &tracking.variables},
          std::pair{"untargeted", &tracking.untargeted}}) {
      const std::string field = std::string("tracking.") + name;
      const YAML::Node section = t[name];
      if (!section) continue;
      if (!section.IsMap()) r.fail(field, "not an object");
      for (const auto& item : section) {
        PointTracking p;
        p.point = item.first.as<std::string>();
        const std::string at = field + "." + p.point;
        if (!item.second.IsMap()) r.fail(at, "not an object");
        p.rms_m = r.number(item.second["rms_m"], at + ".rms_m", true);
        p.max_m = r.number(item.second["max_m"], at + ".max_m", true);
        p.max_at_s = r.number(item.second["max_at_s"], at + ".max_at_s", true);
        into->push_back(p);
      }
    }
    for (const auto& [name, into] : {std::pair{"unreachable", &tracking.unreachable},
                                     std::pair{"retarget_spans", &tracking.retarget_spans}}) {
      const std::string field = std::string("tracking.") + name;
      const YAML::Node u = t[name];
      if (!u) continue;
      if (!u.IsSequence()) r.fail(field, "not a list");
      for (std::size_t i = 0; i < u.size(); ++i) {
        const std::string at = field + "[" + std::to_string(i) + "]";
        if (!u[i].IsMap()) r.fail(at, "not an object");
        UnreachableSpan span;
        span.point = r.text(u[i]["point"], at + ".point");
        span.from_s = r.number(u[i]["from_s"], at + ".from_s", true);
        span.to_s = r.number(u[i]["to_s"], at + ".to_s", true);
        span.worst_m = r.number(u[i]["worst_m"], at + ".worst_m", true);
        span.reason = r.text(u[i]["reason"], at + ".reason");
        into->push_back(span);
      }
    }
  }

  if (const YAML::Node g = root["gains"]; g) {
    if (!g.IsMap()) r.fail("gains", "not an object");
    const double rate = r.number(g["rate_hz"], "gains.rate_hz", true);
    if (std::abs(rate - plan.rate_hz) > 1e-9 * plan.rate_hz)
      r.fail("gains.rate_hz", "must be the plan's rate (inputs.rate_hz)");
    control::TrackingGains& out = plan.gains;
    out.dt_s = 1.0 / plan.rate_hz;
    if (const YAML::Node w = g["weights"]; w) {
      if (!w.IsMap()) r.fail("gains.weights", "not an object");
      for (const auto& [name, value] : control::weightFields(out.weights))
        if (w[name]) *value = r.number(w[name], std::string("gains.weights.") + name);
    }
    const int nk = static_cast<int>(plan.input_names.size());
    const int nd = static_cast<int>(plan.predicted.state_names.size());
    if (nd == 0) r.fail("gains", "needs predicted.state_names");
    const double rows = r.number(g["rows"], "gains.rows", true);
    const double cols = r.number(g["cols"], "gains.cols", true);
    if (rows != nk) r.fail("gains.rows", "must be the number of inputs, " + std::to_string(nk));
    const int ns = 2 * nd + 2 * nk;  // the gains' state: (q, p, rho) and the previous rho
    if (cols != ns)
      r.fail("gains.cols", "must be 2 x (joints + inputs), " + std::to_string(ns));
    const YAML::Node K = g["K"];
    if (!K || !K.IsSequence() || static_cast<int>(K.size()) != n - 1)
      r.fail("gains.K", "needs one gain per step, " + std::to_string(n - 1) + " rows");
    const Eigen::MatrixXd flat = r.matrix(K, "gains.K", n - 1, nk * ns);
    for (Eigen::Index k = 0; k < flat.rows(); ++k) {
      const Eigen::RowVectorXd row = flat.row(k);
      out.K.push_back(Eigen::Map<const Eigen::MatrixXd>(row.data(), ns, nk).transpose());
    }
  }
  return plan;
}

Plan readPlanFile(const std::string& path) {
  return readPlanJson(readInputFile<PlanFileError>(path, kMaxPlanFileBytes, "plan"), path);
}

}  // namespace marionette
