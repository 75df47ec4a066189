// SPDX-License-Identifier: BSD-3-Clause
// The motions the viewer shows: a plan's re-simulation, a rest pose, a simulated input schedule.
#include <cmath>
#include <sstream>

#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/rest_pose.hpp"
#include "marionette/plan/goal_spec.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "marionette/viewer/view.hpp"

namespace marionette::viewer {
namespace {

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(digits);
  os << v;
  return os.str();
}

void requireNames(const std::vector<std::string>& got, const std::vector<std::string>& expected,
                  const std::string& source, const std::string& field, const std::string& what,
                  const Model& model) {
  if (got == expected) return;
  std::string list;
  for (const auto& n : got) list += (list.empty() ? "" : ", ") + n;
  throw ViewError(source + ": " + field + ": [" + list + "] are not the " + what + " of '" +
                  model.name + "'");
}

// Point goals in the canonical text (GoalSpec::describe: "point:...;radius=R + point:...").
std::vector<GoalRegion> goalRegions(const std::string& goal_text) {
  std::vector<GoalRegion> out;
  std::size_t begin = 0;
  while (begin <= goal_text.size()) {
    const std::size_t end = goal_text.find(" + ", begin);
    const std::string part = goal_text.substr(begin, end == std::string::npos ? end : end - begin);
    try {
      const GoalSpec spec = GoalSpec::parse(part);
      if (spec.kind == GoalSpec::Kind::Point)
        for (const auto& t : spec.points)
          out.push_back({t.point, t.position_m, spec.effectiveTolerance()});
    } catch (const std::exception&) {
      // Not a point goal (or not ours to judge): nothing to mark.
    }
    if (end == std::string::npos) break;
    begin = end + 3;
  }
  return out;
}

// What a puppeteer judges a plan by (plan-format.md, `quality`), as the header shows it.
std::vector<std::pair<std::string, std::string>> qualityFacts(const Plan& plan) {
  const PlanQuality& q = plan.quality;
  if (!q.measured) return {};
  auto g3 = [](double v) {
    std::ostringstream os;
    os.precision(3);
    os << v;
    return os.str();
  };
  const std::string hold = "after a " + g3(q.settle_s) + " s hold";
  std::vector<std::pair<std::string, std::string>> out = {
      {"input jerk rms", g3(q.input_jerk_rms_overall) + " /s³"},
      {"string catches", std::to_string(q.string_catches)},
      {"snaps", std::to_string(q.snaps) +
                    (q.snaps > 0 ? " (the first: " + q.first_snap_string + " at " +
                                       fixed(q.first_snap_t_s, 2) + " s)"
                                 : "")},
      {"peak tension / static",
       "×" + g3(q.peak_tension_ratio) +
           (q.peak_tension_string.empty()
                ? ""
                : " (" + q.peak_tension_string + " at " + fixed(q.peak_tension_t_s, 2) + " s)")},
      {"joint speed rms " + hold,
       g3(q.residual_joint_speed_rms) +
           (q.swing_joint.empty()
                ? ""
                : " (most: " + q.swing_joint + ", " + g3(q.swing_joint_speed_rms) + ")")},
      {"kinetic energy " + hold, g3(1000 * q.residual_kinetic_energy_J) + " mJ"}};
  if (std::isfinite(plan.min_clearance_m))
    out.push_back({"min clearance", fixed(100 * plan.min_clearance_m, 1) + " cm"});
  if (std::isfinite(plan.min_stage_clearance_m))
    out.push_back({"min stage clearance", fixed(100 * plan.min_stage_clearance_m, 1) + " cm"});
  return out;
}

// "runs/raw.json" -> "raw.json"
std::string fileName(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

Motion motionOfPlan(const Plan& plan, const std::string& source, const Model& model) {
  if (plan.model != model.name)
    throw ViewError(source + ": model: the plan is for '" + plan.model + "', not '" + model.name +
                    "'");
  requireNames(plan.input_names, itemNames(model.kinematic), source, "inputs.names",
               "kinematic variables", model);
  if (plan.predicted.states.rows() != plan.samples())
    throw ViewError(source +
                    ": predicted.states: missing (a plan from `marionette plan --out` "
                    "has them)");
  requireNames(plan.predicted.state_names, itemNames(model.dynamic), source,
               "predicted.state_names", "dynamic variables", model);
  requireNames(plan.predicted.string_names, itemNames(model.strings), source,
               "predicted.string_names", "strings", model);
  Motion m;
  m.title = plan.model + (plan.scene.empty() ? "" : " in " + plan.scene) + ": " + plan.goal;
  m.name = fileName(source);
  m.quality = qualityFacts(plan);
  m.info = {{"planner", plan.stats.planner.empty() ? "?" : plan.stats.planner},
            {"outcome", toString(plan.outcome)},
            {"duration", fixed(plan.duration_s(), 2) + " s at " + fixed(plan.rate_hz, 0) + " Hz"}};
  if (std::isfinite(plan.min_stage_clearance_m))
    m.info.push_back({"min stage clearance", fixed(100 * plan.min_stage_clearance_m, 1) + " cm"});
  if (plan.outcome != PlanOutcome::Exact)
    m.problems.push_back(plan.message.empty() ? toString(plan.outcome) : plan.message);
  // An exact plan that a puppeteer would not stage says why, as `plan` prints it (an exact
  // performance is a show: perform's verdict).
  if (plan.outcome == PlanOutcome::Exact && plan.quality.measured &&
      plan.performance.targets.points.empty()) {
    const std::vector<std::string> shortfalls = stageShortfalls(plan);
    if (!shortfalls.empty())
      m.problems.push_back("not stage-worthy: " + joinNames(shortfalls, "; "));
  }
  for (const auto& v : plan.limit_violations) m.problems.push_back(v);
  m.rate_hz = plan.rate_hz;
  m.q.resize(plan.samples(), model.nq());
  m.q << plan.predicted.states, plan.inputs;
  m.tensions_N = plan.predicted.tensions_N;
  m.contact_names = plan.predicted.contact_names;
  m.contact_normal_N = plan.predicted.contact_normal_N;
  m.contact_friction_N = plan.predicted.contact_friction_N;
  m.goals = goalRegions(plan.goal);
  m.goal_sample = plan.goal_sample < plan.samples() ? plan.goal_sample : -1;
  if (m.goal_sample >= 0)
    m.info.push_back({"goal reached", "at " + fixed(m.goal_sample / plan.rate_hz, 2) + " s"});
  for (const auto& g : m.goals) m.trace_points.push_back(g.point);
  // A performance: its targets, and how well each step followed them.
  if (!plan.performance.targets.points.empty()) {
    for (const std::string& name : plan.performance.targets.points) {
      if (model.pointIndex(name) < 0)
        throw ViewError(source + ": targets.names: '" + name + "' is not a point of '" +
                        model.name + "'");
      m.trace_points.push_back(name);
    }
    m.performance_points = plan.performance.targets.points;
    m.performance_m = plan.performance.targets.positions_m.topRows(
        std::min<Eigen::Index>(plan.performance.targets.positions_m.rows(), plan.samples()));
    const bool dynamic = !plan.performance.tracking.dynamic.empty();
    for (const PointTracking& t :
         dynamic ? plan.performance.tracking.dynamic : plan.performance.tracking.kinematic)
      m.quality.push_back({"tracking " + t.point + " rms",
                           fixed(100 * t.rms_m, 1) + " cm (max " + fixed(100 * t.max_m, 1) +
                               " at " + fixed(t.max_at_s, 2) + " s)"});
    if (!plan.performance.tracking.unreachable.empty())
      m.problems.push_back(std::to_string(plan.performance.tracking.unreachable.size()) +
                           " spans not followed within the tolerance (first: " +
                           plan.performance.tracking.unreachable.front().point + " at " +
                           fixed(plan.performance.tracking.unreachable.front().from_s, 2) + " s, " +
                           plan.performance.tracking.unreachable.front().reason + ")");
  }
  return m;
}

Motion motionAtRest(const ModelPtr& model) {
  const Eigen::VectorXd rho = model->defaultInputs();
  const RestPose rest = computeRestPose(model, rho);
  if (!rest.ok)
    throw ViewError(model->name + ": no rest pose for the default inputs: " + rest.message);
  Motion m;
  m.title = model->name + " at rest";
  m.name = "rest pose";
  m.info = {{"inputs", "defaults"}, {"potential energy", fixed(rest.potential_J, 4) + " J"}};
  m.rate_hz = 1.0;
  m.q.resize(1, model->nq());
  m.q << rest.q.transpose(), rho.transpose();
  m.tensions_N = rest.tension_N.transpose();
  return m;
}

Motion motionOfInputs(const ModelPtr& model, const InputSchedule& inputs,
                      const std::string& inputs_source, double dt_s, double duration_s) {
  if (!(dt_s > 0) || !std::isfinite(dt_s)) throw FieldError("dt_s", "must be > 0");
  if (!(duration_s >= 0) || !std::isfinite(duration_s))
    throw FieldError("duration_s", "must be >= 0");
  SimulationOptions options;
  options.dt_s = dt_s;
  options.duration_s = duration_s;
  options.energy_every_row = false;
  std::vector<Eigen::VectorXd> rows;
  std::vector<Eigen::VectorXd> tensions;
  const SimulationSummary summary = simulate(model, inputs, options, [&](const SimulationRow& r) {
    Eigen::VectorXd q(model->nq());
    q << *r.q, *r.rho;
    rows.push_back(q);
    tensions.push_back(*r.tension_N);
    return true;
  });
  Motion m;
  m.title = model->name + ": " + inputs_source;
  m.name = fileName(inputs_source);
  m.info = {{"simulated", "midpoint VI, dt " + fixed(dt_s * 1000, 1) + " ms"},
            {"duration", fixed(duration_s, 2) + " s"},
            {"max string over-stretch", fixed(summary.max_violation_m * 1e6, 3) + " µm"}};
  m.rate_hz = 1.0 / dt_s;
  m.q.resize(static_cast<Eigen::Index>(rows.size()), model->nq());
  m.tensions_N.resize(static_cast<Eigen::Index>(rows.size()), model->nstrings());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    m.q.row(static_cast<Eigen::Index>(i)) = rows[i].transpose();
    m.tensions_N.row(static_cast<Eigen::Index>(i)) = tensions[i].transpose();
  }
  for (const auto& w : inputs.speedWarnings(*model)) m.problems.push_back(w);
  return m;
}

}  // namespace marionette::viewer
