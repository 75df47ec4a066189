#include "marionette/service/wire.hpp"

#include <cctype>
#include <cmath>
#include <sstream>

#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene.hpp"

namespace marionette::wire {
namespace {

[[noreturn]] void invalid(const std::string& field, const std::string& message) {
  throw RequestError(RequestError::Code::InvalidArgument, field + ": " + message);
}

std::string number(double x) {
  std::ostringstream os;
  os.precision(10);
  os << x;
  return os.str();
}

void requireFinite(const std::string& field, double x) {
  if (!std::isfinite(x)) invalid(field, "must be a finite number, got " + number(x));
}

v1::VariableKind kindOf(const Model& model, int q_index) {
  for (const Frame& f : model.frames)
    if (f.variable == q_index && f.type == JointType::Rotate) return v1::VARIABLE_KIND_ROTATION;
  return v1::VARIABLE_KIND_TRANSLATION;  // a sliding frame, or a winch's string length
}

void toProto(const Eigen::Vector3d& v, v1::Vector3* out) {
  out->set_x(v.x());
  out->set_y(v.y());
  out->set_z(v.z());
}

Eigen::Vector3d fromProto(const v1::Vector3& v) {
  return {v.x(), v.y(), v.z()};
}

void matrixToProto(const Eigen::MatrixXd& m, v1::Matrix* out) {
  out->set_rows(static_cast<int>(m.rows()));
  out->set_cols(static_cast<int>(m.cols()));
  auto* data = out->mutable_data();
  data->Reserve(static_cast<int>(m.size()));
  for (int i = 0; i < m.rows(); ++i)
    for (int j = 0; j < m.cols(); ++j) data->Add(m(i, j));
}

Eigen::MatrixXd matrixFromProto(const v1::Matrix& m, const std::string& field) {
  if (m.rows() < 0 || m.cols() < 0 || m.data_size() != int64_t(m.rows()) * m.cols())
    throw std::invalid_argument(field + ": " + std::to_string(m.data_size()) + " values for a " +
                                std::to_string(m.rows()) + " x " + std::to_string(m.cols()) +
                                " matrix");
  Eigen::MatrixXd out(m.rows(), m.cols());
  for (int i = 0; i < m.rows(); ++i)
    for (int j = 0; j < m.cols(); ++j) out(i, j) = m.data(i * m.cols() + j);
  return out;
}

template <class Repeated>
Eigen::VectorXd vectorFromProto(const Repeated& r) {
  Eigen::VectorXd v(r.size());
  for (int i = 0; i < r.size(); ++i) v[i] = r.Get(i);
  return v;
}

template <class Repeated>
void vectorToProto(const Eigen::VectorXd& v, Repeated* out) {
  out->Reserve(static_cast<int>(v.size()));
  for (int i = 0; i < v.size(); ++i) out->Add(v[i]);
}

std::string names(const std::vector<std::string>& all) {
  std::string s;
  for (const auto& n : all) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::vector<std::string> kinematicNames(const Model& model) {
  std::vector<std::string> out;
  for (const auto& v : model.kinematic) out.push_back(v.name);
  return out;
}

std::vector<std::string> dynamicNames(const Model& model) {
  std::vector<std::string> out;
  for (const auto& v : model.dynamic) out.push_back(v.name);
  return out;
}

// Index of a kinematic variable (0..n_k-1) by name, or RequestError naming the field.
int kinematicIndex(const Model& model, const std::string& name, const std::string& field) {
  const int i = model.variableIndex(name);
  if (i < model.nd())
    invalid(field, "'" + name + "' is not a kinematic variable of '" + model.name + "' (" +
                       names(kinematicNames(model)) + ")");
  return i - model.nd();
}

int dynamicIndex(const Model& model, const std::string& name, const std::string& field) {
  const int i = model.variableIndex(name);
  if (i < 0 || i >= model.nd())
    invalid(field, "'" + name + "' is not a dynamic variable of '" + model.name + "' (" +
                       names(dynamicNames(model)) + ")");
  return i;
}

}  // namespace

// ---- Descriptions ------------------------------------------------------------------------------

v1::ModelDescription describeModel(const Model& model) {
  v1::ModelDescription d;
  d.set_name(model.name);
  d.set_description(model.description);
  d.set_gravity_m_s2(model.gravity_mps2);
  for (int i = 0; i < model.nd(); ++i) {
    const DynamicVariable& v = model.dynamic[i];
    v1::DynamicVariable* o = d.add_dynamic();
    o->set_name(v.name);
    o->set_kind(kindOf(model, i));
    o->set_lower(v.limit.lower);
    o->set_upper(v.limit.upper);
    o->set_initial(v.initial);
  }
  for (int i = 0; i < model.nk(); ++i) {
    const KinematicVariable& v = model.kinematic[i];
    v1::KinematicVariable* o = d.add_kinematic();
    o->set_name(v.name);
    o->set_kind(kindOf(model, model.nd() + i));
    o->set_lower(v.lower);
    o->set_upper(v.upper);
    o->set_default_value(v.default_value);
    o->set_max_speed(v.max_speed);
    o->set_max_accel(v.max_accel);
  }
  auto frameName = [&](int f) { return f >= 0 ? model.frames[f].name : std::string("world"); };
  for (const String& s : model.strings) {
    v1::StringDescription* o = d.add_strings();
    o->set_name(s.name);
    o->set_puppet_frame(frameName(s.puppet_frame));
    o->set_rig_frame(frameName(s.rig_frame));
    if (s.length_variable >= 0) o->set_length_variable(model.variableName(s.length_variable));
    o->set_length_m(s.length_m);
  }
  for (const Point& p : model.points) {
    v1::NamedPoint* o = d.add_points();
    o->set_name(p.name);
    o->set_frame(frameName(p.frame));
    toProto(p.position_m, o->mutable_position_m());
  }
  return d;
}

v1::ModelSummary summarize(const Model& model) {
  v1::ModelSummary s;
  s.set_name(model.name);
  s.set_description(model.description);
  s.set_dynamic_count(model.nd());
  s.set_kinematic_count(model.nk());
  s.set_string_count(model.nstrings());
  return s;
}

v1::SceneSummary summarize(const Scene& scene) {
  v1::SceneSummary s;
  s.set_name(scene.name);
  s.set_description(scene.description);
  for (const Obstacle& o : scene.obstacles) s.add_obstacles(o.name);
  s.set_triangles(static_cast<int64_t>(scene.triangleCount()));
  if (scene.bounds) {
    toProto(scene.bounds->min_m, s.mutable_bounds()->mutable_min_m());
    toProto(scene.bounds->max_m, s.mutable_bounds()->mutable_max_m());
  }
  return s;
}

// ---- Goals -------------------------------------------------------------------------------------

void goalToProto(const GoalSpec& goal, v1::Goal* out) {
  out->Clear();
  switch (goal.kind) {
    case GoalSpec::Kind::Joint:
      for (const auto& [name, value] : goal.values)
        (*out->mutable_joints()->mutable_values())[name] = value;
      break;
    case GoalSpec::Kind::RestOf:
      for (const auto& [name, value] : goal.values)
        (*out->mutable_rest_of()->mutable_inputs())[name] = value;
      break;
    case GoalSpec::Kind::Point:
      for (const auto& t : goal.points) {
        v1::PointTarget* p = out->mutable_points()->add_targets();
        p->set_point(t.point);
        toProto(t.position_m, p->mutable_position_m());
      }
      break;
  }
  if (std::isfinite(goal.tolerance)) out->set_tolerance(goal.tolerance);
  out->set_at_rest(goal.at_rest);
  out->set_rest_energy_j(goal.rest_energy_J);
}

GoalSpec goalFromProto(const v1::Goal& goal, const std::string& field) {
  GoalSpec g;
  // Map entries in name order: the same request gives the same goal text.
  auto sorted = [](const google::protobuf::Map<std::string, double>& m) {
    std::map<std::string, double> s(m.begin(), m.end());
    return std::vector<std::pair<std::string, double>>(s.begin(), s.end());
  };
  // Named targets, at least one, all finite.
  auto named = [&](const google::protobuf::Map<std::string, double>& m, const std::string& f,
                   const char* what) {
    auto values = sorted(m);
    if (values.empty()) invalid(f, std::string("names no ") + what);
    for (const auto& [name, v] : values) requireFinite(f + "[" + name + "]", v);
    return values;
  };
  switch (goal.kind_case()) {
    case v1::Goal::kJoints:
      g.kind = GoalSpec::Kind::Joint;
      g.values = named(goal.joints().values(), field + ".joints.values", "joint");
      break;
    case v1::Goal::kRestOf:
      g.kind = GoalSpec::Kind::RestOf;
      g.values = named(goal.rest_of().inputs(), field + ".rest_of.inputs", "input");
      break;
    case v1::Goal::kPoints: {
      g.kind = GoalSpec::Kind::Point;
      const auto& targets = goal.points().targets();
      if (targets.empty()) invalid(field + ".points.targets", "names no point");
      for (int i = 0; i < targets.size(); ++i) {
        const std::string f = field + ".points.targets[" + std::to_string(i) + "]";
        if (targets[i].point().empty()) invalid(f + ".point", "is empty");
        if (!targets[i].has_position_m()) invalid(f + ".position_m", "is not set");
        GoalSpec::PointTarget t{targets[i].point(), fromProto(targets[i].position_m())};
        for (int k = 0; k < 3; ++k) requireFinite(f + ".position_m", t.position_m[k]);
        g.points.push_back(t);
      }
      break;
    }
    case v1::Goal::KIND_NOT_SET: invalid(field, "no goal: set joints, points or rest_of");
  }
  requireFinite(field + ".tolerance", goal.tolerance());
  if (goal.tolerance() < 0) invalid(field + ".tolerance", "must be >= 0 (0 = the default)");
  if (goal.tolerance() > 0) g.tolerance = goal.tolerance();
  g.at_rest = goal.at_rest();
  requireFinite(field + ".rest_energy_j", goal.rest_energy_j());
  if (goal.rest_energy_j() < 0) invalid(field + ".rest_energy_j", "must be >= 0 (0 = the default)");
  if (goal.rest_energy_j() > 0) g.rest_energy_J = goal.rest_energy_j();
  return g;
}

// ---- Starts ------------------------------------------------------------------------------------

StartSpec startSpecFromProto(const Model& model, const v1::Start& start, Eigen::VectorXd* inputs) {
  const int nd = model.nd(), nk = model.nk();
  Eigen::VectorXd rho = model.defaultInputs();
  if (start.inputs_size() && !start.input_values().empty())
    invalid("start", "give inputs or input_values, not both");
  if (start.inputs_size()) {
    if (start.inputs_size() != nk)
      invalid("start.inputs", std::to_string(start.inputs_size()) + " values for the " +
                                  std::to_string(nk) + " kinematic variables of '" + model.name +
                                  "' (" + names(kinematicNames(model)) + ")");
    rho = vectorFromProto(start.inputs());
  }
  for (const auto& [name, v] :
       std::map<std::string, double>(start.input_values().begin(), start.input_values().end()))
    rho[kinematicIndex(model, name, "start.input_values")] = v;
  for (int i = 0; i < nk; ++i) {
    const KinematicVariable& kv = model.kinematic[i];
    requireFinite("start.inputs[" + kv.name + "]", rho[i]);
    if (rho[i] < kv.lower || rho[i] > kv.upper)
      invalid("start.inputs[" + kv.name + "]", number(rho[i]) + " is outside its range [" +
                                                   number(kv.lower) + ", " + number(kv.upper) +
                                                   "]");
  }
  if (inputs) *inputs = rho;

  StartSpec spec;
  if (start.positions_size() && !start.position_values().empty())
    invalid("start", "give positions or position_values, not both");
  if (start.positions_size()) {
    if (start.positions_size() != nd)
      invalid("start.positions", std::to_string(start.positions_size()) + " values for the " +
                                     std::to_string(nd) + " dynamic variables of '" + model.name +
                                     "'");
    for (int i = 0; i < nd; ++i) {
      requireFinite("start.positions[" + std::to_string(i) + "]", start.positions(i));
      spec.positions.emplace_back(model.dynamic[i].name, start.positions(i));
    }
  }
  for (const auto& [name, v] : std::map<std::string, double>(start.position_values().begin(),
                                                             start.position_values().end())) {
    dynamicIndex(model, name, "start.position_values");
    requireFinite("start.position_values[" + name + "]", v);
    spec.positions.emplace_back(name, v);
  }
  for (const auto& [name, v] : std::map<std::string, double>(start.velocity_values().begin(),
                                                             start.velocity_values().end())) {
    dynamicIndex(model, name, "start.velocity_values");
    requireFinite("start.velocity_values[" + name + "]", v);
    spec.velocities.emplace_back(name, v);
  }
  spec.from_rest = spec.positions.empty();
  return spec;
}

void applyStart(const Model& model, const v1::Start& start, PlanRequest& request) {
  Eigen::VectorXd rho;
  request.start = startSpecFromProto(model, start, &rho);
  request.start_inputs = rho;
  // The start in the CLI's syntax, for the plan's record.
  std::string text;
  if (!start.input_values().empty() || start.inputs_size()) {
    text = "rest-of:";
    for (int i = 0; i < model.nk(); ++i)
      text += (i ? "," : "") + model.kinematic[i].name + "=" + number(rho[i]);
  }
  if (!request.start.positions.empty()) {
    std::string q = "q:";
    for (std::size_t i = 0; i < request.start.positions.size(); ++i)
      q += (i ? "," : "") + request.start.positions[i].first + "=" +
           number(request.start.positions[i].second);
    text = text.empty() ? q : text + " " + q;
  }
  request.start_text = text.empty() ? "rest" : text;
}

// ---- Input sequences ---------------------------------------------------------------------------

void inputsToProto(const Model& model, const InputSchedule& schedule, v1::InputSequence* out) {
  out->Clear();
  for (const auto& v : model.kinematic) out->add_variables(v.name);
  if (schedule.times_s.empty()) {  // constant: one sample of the defaults
    out->add_times_s(0.0);
    vectorToProto(schedule.defaults.size() ? schedule.defaults : model.defaultInputs(),
                  out->mutable_values());
    return;
  }
  for (double t : schedule.times_s) out->add_times_s(t);
  for (int i = 0; i < schedule.values.rows(); ++i)
    vectorToProto(schedule.values.row(i).transpose(), out->mutable_values());
}

InputSchedule inputsFromProto(const Model& model, const v1::InputSequence& in,
                              const std::string& field) {
  InputSchedule s;
  s.defaults = model.defaultInputs();
  const int cols = in.variables_size();
  std::vector<int> column_index;
  for (int j = 0; j < cols; ++j) {
    const int k =
        kinematicIndex(model, in.variables(j), field + ".variables[" + std::to_string(j) + "]");
    for (int seen : column_index)
      if (seen == k) invalid(field + ".variables", "'" + in.variables(j) + "' is listed twice");
    column_index.push_back(k);
  }
  if (cols == 0) {
    if (in.values_size() || in.times_s_size()) invalid(field + ".variables", "names no variable");
    return s;  // constant at the defaults
  }
  if (in.values_size() % cols != 0)
    invalid(field + ".values", std::to_string(in.values_size()) + " values are not whole rows of " +
                                   std::to_string(cols) + " variables");
  const int rows = in.values_size() / cols;
  if (rows == 0) invalid(field + ".values", "no samples");
  if (in.times_s_size()) {
    if (in.times_s_size() != rows)
      invalid(field + ".times_s", std::to_string(in.times_s_size()) + " times for " +
                                      std::to_string(rows) + " rows of values");
  } else {
    requireFinite(field + ".rate_hz", in.rate_hz());
    if (!(in.rate_hz() > 0)) invalid(field + ".rate_hz", "must be > 0 (or give times_s)");
  }
  s.times_s.resize(rows);
  s.values.resize(rows, model.nk());
  for (int i = 0; i < rows; ++i) {
    const double t = in.times_s_size() ? in.times_s(i) : i / in.rate_hz();
    requireFinite(field + ".times_s[" + std::to_string(i) + "]", t);
    if (i == 0 && t != 0.0) invalid(field + ".times_s[0]", "must be 0, got " + number(t));
    if (i > 0 && !(t > s.times_s[i - 1]))
      invalid(field + ".times_s[" + std::to_string(i) + "]",
              "times must increase (" + number(t) + " after " + number(s.times_s[i - 1]) + ")");
    s.times_s[i] = t;
    s.values.row(i) = s.defaults.transpose();
    for (int j = 0; j < cols; ++j) {
      const double v = in.values(i * cols + j);
      const KinematicVariable& kv = model.kinematic[column_index[j]];
      const std::string f = field + ".values[" + std::to_string(i) + "][" + kv.name + "]";
      requireFinite(f, v);
      if (v < kv.lower || v > kv.upper)
        invalid(f, number(v) + " is outside the range [" + number(kv.lower) + ", " +
                       number(kv.upper) + "]");
      s.values(i, column_index[j]) = v;
    }
  }
  return s;
}

// ---- Plans -------------------------------------------------------------------------------------

void planToProto(const Plan& p, v1::PlanResponse* out) {
  out->Clear();
  out->set_model(p.model);
  out->set_scene(p.scene);
  out->set_goal(p.goal);
  out->set_start(p.start);
  out->set_seed(p.seed);
  out->set_outcome(p.outcome == PlanOutcome::Exact         ? v1::OUTCOME_EXACT
                   : p.outcome == PlanOutcome::Approximate ? v1::OUTCOME_APPROXIMATE
                                                           : v1::OUTCOME_NOT_FOUND);
  out->set_message(p.message);
  v1::InputSequence* in = out->mutable_inputs();
  for (const auto& n : p.input_names) in->add_variables(n);
  in->set_rate_hz(p.rate_hz);
  in->mutable_values()->Reserve(static_cast<int>(p.inputs.size()));
  for (int i = 0; i < p.inputs.rows(); ++i)
    for (int j = 0; j < p.inputs.cols(); ++j) in->add_values(p.inputs(i, j));
  for (const auto& n : p.state_names) out->add_state_names(n);
  for (const auto& n : p.string_names) out->add_string_names(n);
  matrixToProto(p.states, out->mutable_states());
  matrixToProto(p.tensions_N, out->mutable_tensions_n());
  vectorToProto(p.clearance_m, out->mutable_clearance_m());
  vectorToProto(p.stage_clearance_m, out->mutable_stage_clearance_m());
  vectorToProto(p.goal_distance, out->mutable_goal_distance());
  out->set_collision_free(p.collision_free);
  out->set_first_collision(p.first_collision);
  out->set_collision_pair(p.collision_pair);
  out->set_goal_sample(p.goal_sample);
  out->set_goal_distance_min(p.goal_distance_min);
  out->set_min_clearance_m(p.min_clearance_m);
  out->set_min_stage_clearance_m(p.min_stage_clearance_m);
  out->set_min_stage_clearance_sample(p.min_stage_clearance_sample);
  out->set_max_violation_m(p.max_violation_m);
  out->set_min_tension_n(p.min_tension_N);
  for (const auto& v : p.limit_violations) out->add_limit_violations(v);
  v1::PlanStatistics* s = out->mutable_statistics();
  s->set_planner(p.stats.planner);
  s->set_planning_time_s(p.stats.planning_time_s);
  s->set_verification_time_s(p.stats.verification_time_s);
  s->set_total_time_s(p.stats.total_time_s);
  s->set_propagations(p.stats.propagations);
  s->set_collision_checks(p.stats.collision_checks);
  s->set_tree_states(p.stats.tree_states);
  s->set_roadmap_vertices(p.stats.roadmap_vertices);
  s->set_roadmap_edges(p.stats.roadmap_edges);
  s->set_edges_validated(p.stats.edges_validated);
  s->set_edges_rejected(p.stats.edges_rejected);
  s->set_roadmap_build_time_s(p.stats.roadmap_build_time_s);
  s->set_best_goal_distance(p.stats.best_goal_distance);
}

Plan planFromProto(const v1::PlanResponse& r) {
  Plan p;
  p.model = r.model();
  p.scene = r.scene();
  p.goal = r.goal();
  p.start = r.start();
  p.seed = r.seed();
  p.outcome = r.outcome() == v1::OUTCOME_EXACT         ? PlanOutcome::Exact
              : r.outcome() == v1::OUTCOME_APPROXIMATE ? PlanOutcome::Approximate
                                                       : PlanOutcome::NotFound;
  p.message = r.message();
  const v1::InputSequence& in = r.inputs();
  p.rate_hz = in.rate_hz();
  p.input_names.assign(in.variables().begin(), in.variables().end());
  const int nk = in.variables_size();
  if (nk == 0 ? in.values_size() != 0 : in.values_size() % nk != 0)
    throw std::invalid_argument("plan.inputs: " + std::to_string(in.values_size()) +
                                " values are not whole rows of " + std::to_string(nk));
  const int n = nk ? in.values_size() / nk : 0;
  p.inputs.resize(n, nk);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < nk; ++j) p.inputs(i, j) = in.values(i * nk + j);
  p.state_names.assign(r.state_names().begin(), r.state_names().end());
  p.string_names.assign(r.string_names().begin(), r.string_names().end());
  p.states = matrixFromProto(r.states(), "plan.states");
  p.tensions_N = matrixFromProto(r.tensions_n(), "plan.tensions_n");
  p.clearance_m = vectorFromProto(r.clearance_m());
  p.stage_clearance_m = vectorFromProto(r.stage_clearance_m());
  p.goal_distance = vectorFromProto(r.goal_distance());
  for (auto [size, what] : {std::pair<long, const char*>{p.states.rows(), "states"},
                            {p.tensions_N.rows(), "tensions_n"},
                            {p.clearance_m.size(), "clearance_m"},
                            {p.stage_clearance_m.size(), "stage_clearance_m"},
                            {p.goal_distance.size(), "goal_distance"}})
    if (size != n)
      throw std::invalid_argument(std::string("plan.") + what + ": " + std::to_string(size) +
                                  " rows for " + std::to_string(n) + " input samples");
  p.collision_free = r.collision_free();
  p.first_collision = r.first_collision();
  p.collision_pair = r.collision_pair();
  p.goal_sample = r.goal_sample();
  p.goal_distance_min = r.goal_distance_min();
  p.min_clearance_m = r.min_clearance_m();
  p.min_stage_clearance_m = r.min_stage_clearance_m();
  p.min_stage_clearance_sample = r.min_stage_clearance_sample();
  p.max_violation_m = r.max_violation_m();
  p.min_tension_N = r.min_tension_n();
  p.limit_violations.assign(r.limit_violations().begin(), r.limit_violations().end());
  const v1::PlanStatistics& s = r.statistics();
  p.stats.planner = s.planner();
  p.stats.planning_time_s = s.planning_time_s();
  p.stats.verification_time_s = s.verification_time_s();
  p.stats.total_time_s = s.total_time_s();
  p.stats.propagations = s.propagations();
  p.stats.collision_checks = s.collision_checks();
  p.stats.tree_states = s.tree_states();
  p.stats.roadmap_vertices = s.roadmap_vertices();
  p.stats.roadmap_edges = s.roadmap_edges();
  p.stats.edges_validated = s.edges_validated();
  p.stats.edges_rejected = s.edges_rejected();
  p.stats.roadmap_build_time_s = s.roadmap_build_time_s();
  p.stats.best_goal_distance = s.best_goal_distance();
  return p;
}

// ---- Plan requests -----------------------------------------------------------------------------

PlanRequest planRequestFromProto(const v1::PlanRequest& r, ModelPtr model,
                                 CollisionModelPtr collision, double max_time_limit_s) {
  PlanRequest req;
  req.model = std::move(model);
  req.collision = collision;
  const Model& m = *req.model;
  PlannerOptions& opt = req.options;

  opt.planner = r.planner().empty() ? "est" : r.planner();
  const PlannerInfo* planner = findPlanner(opt.planner);
  if (!planner)
    invalid("planner", "unknown '" + opt.planner + "' (expected " + names(plannerNames()) + ")");
  if (!r.parameters().empty()) {
    if (planner->kind == SearchKind::Roadmap)
      invalid("parameters", "planner 'prm' takes no OMPL parameters (got '" +
                                r.parameters().begin()->first + "')");
    const auto allowed = plannerParameters(opt.planner);
    std::string allowed_names;
    for (const auto& [k, v] : allowed) allowed_names += (allowed_names.empty() ? "" : ", ") + k;
    for (const auto& [k, v] : r.parameters()) {
      if (!allowed.count(k))
        invalid(
            "parameters[" + k + "]",
            "planner '" + opt.planner + "' has no such parameter (it has: " + allowed_names + ")");
      opt.params[k] = v;
    }
  }
  requireFinite("time_limit_s", r.time_limit_s());
  if (!(r.time_limit_s() > 0) || r.time_limit_s() > max_time_limit_s)
    invalid("time_limit_s",
            "must be in (0, " + number(max_time_limit_s) + "] s, got " + number(r.time_limit_s()));
  opt.time_limit_s = r.time_limit_s();
  opt.seed = r.seed() ? r.seed() : 1;
  opt.roadmap.seed = opt.seed;
  requireFinite("output_rate_hz", r.output_rate_hz());
  if (r.output_rate_hz() != 0) {
    if (!(r.output_rate_hz() >= 1 && r.output_rate_hz() <= 1000))
      invalid("output_rate_hz",
              "must be within [1, 1000] Hz (0 = 50 Hz), got " + number(r.output_rate_hz()));
    opt.rate_hz = r.output_rate_hz();
  }
  requireFinite("step_s", r.step_s());
  if (r.step_s() != 0) {
    if (!(r.step_s() >= 1e-3 && r.step_s() <= 0.1))
      invalid("step_s", "must be within [0.001, 0.1] s (0 = 0.02 s), got " + number(r.step_s()));
    opt.step_s = r.step_s();
  }

  applyStart(m, r.start(), req);
  if (!r.has_goal()) invalid("goal", "is not set");
  req.goal = goalFromProto(r.goal(), "goal");
  try {
    GoalEvaluator check(req.model, req.goal);  // unknown names, unreachable rest-of inputs
  } catch (const FieldError& e) {
    // The library names GoalSpec's fields; the proto's depend on the goal's kind.
    std::string field = e.field();
    if (field.compare(0, 11, "goal.values") == 0)
      field =
          (req.goal.kind == GoalSpec::Kind::RestOf ? "goal.rest_of.inputs" : "goal.joints.values") +
          field.substr(11);
    invalid(protoField(field), e.problem());
  }
  // Point targets must lie on the stage.
  const Scene& scene = collision->scene();
  if (req.goal.kind == GoalSpec::Kind::Point && scene.bounds) {
    for (std::size_t i = 0; i < req.goal.points.size(); ++i) {
      const Eigen::Vector3d& x = req.goal.points[i].position_m;
      if ((x.array() < scene.bounds->min_m.array()).any() ||
          (x.array() > scene.bounds->max_m.array()).any())
        invalid("goal.points.targets[" + std::to_string(i) + "].position_m",
                "(" + number(x.x()) + ", " + number(x.y()) + ", " + number(x.z()) +
                    ") m is outside the stage '" + scene.name + "' (" +
                    number(scene.bounds->min_m.x()) + ".." + number(scene.bounds->max_m.x()) +
                    ", " + number(scene.bounds->min_m.y()) + ".." +
                    number(scene.bounds->max_m.y()) + ", " + number(scene.bounds->min_m.z()) +
                    ".." + number(scene.bounds->max_m.z()) + ")");
    }
  }
  return req;
}

// ---- Progress and files ----------------------------------------------------------------------

void progressToProto(const PlanProgress& p, v1::PlanProgress* out) {
  out->set_phase(p.phase);
  out->set_elapsed_s(p.elapsed_s);
  out->set_propagations(p.propagations);
  out->set_states(p.states);
  out->set_best_goal_distance(p.best_goal_distance);
}

PlanProgress progressFromProto(const v1::PlanProgress& e) {
  PlanProgress p;
  p.phase = e.phase();
  p.elapsed_s = e.elapsed_s();
  p.propagations = e.propagations();
  p.states = e.states();
  p.best_goal_distance = e.best_goal_distance();
  return p;
}

// ---- Simulations -------------------------------------------------------------------------------

SimulationCall simulationCallFromProto(const v1::SimulateRequest& req, const Model& m) {
  SimulationCall call;
  SimulationOptions& opt = call.options;
  auto bounded = [](const std::string& field, double x, double dflt, double hi) {
    if (!std::isfinite(x) || x < 0 || x > hi)
      invalid(field, "must be in [0, " + std::to_string(hi) + "], got " + std::to_string(x));
    return x == 0 ? dflt : x;
  };
  opt.dt_s = bounded("dt_s", req.dt_s(), 0.01, 0.1);
  if (opt.dt_s < 1e-5) invalid("dt_s", "must be at least 1e-5 s");
  opt.damping_scale = bounded("damping_scale", req.damping_scale(), 1.0, 1e3);
  Eigen::VectorXd rho0;
  opt.start = startSpecFromProto(m, req.start(), &rho0);
  call.inputs =
      req.has_inputs() ? inputsFromProto(m, req.inputs(), "inputs") : InputSchedule::constant(m);
  if (req.start().inputs_size() || !req.start().input_values().empty()) {
    // The inputs at t = 0 are the sequence's first sample; start inputs only make sense for a
    // rig held still.
    if (req.has_inputs())
      invalid("start.inputs",
              "give the start inputs as the first sample of `inputs` (or leave `inputs` unset to "
              "hold them)");
    call.inputs.defaults = rho0;
  }
  const double default_duration = call.inputs.times_s.empty() ? 1.0 : call.inputs.times_s.back();
  opt.duration_s = bounded("duration_s", req.duration_s(), default_duration, 3600.0);
  const double steps = opt.duration_s / opt.dt_s;
  if (steps > kMaxSimulationSteps)
    invalid("duration_s", std::to_string(static_cast<long>(steps)) +
                              " steps of dt_s; a request may ask for at most " +
                              std::to_string(kMaxSimulationSteps));
  call.with_scene = req.scene().source_case() != v1::SceneRef::SOURCE_NOT_SET;
  if (req.stop_on_collision() && !call.with_scene) invalid("stop_on_collision", "needs a scene");
  call.check.stop_at_first_collision = req.stop_on_collision();
  return call;
}

namespace {
void contactToProto(const ContactPair& p, v1::Contact* c) {
  c->set_kind(contactKindName(p.kind));
  c->set_first(p.first);
  c->set_second(p.second);
  c->set_description(p.describe());
}
}  // namespace

void sampleToProto(const CheckedSample& sample, v1::SimulationSample* s) {
  const SimulationRow& row = sample.row;
  s->set_t_s(row.t_s);
  vectorToProto(*row.q, s->mutable_q());
  vectorToProto(*row.rho, s->mutable_inputs());
  s->set_energy_j(row.energy_J);
  s->set_max_violation_m(row.max_violation_m);
  vectorToProto(*row.tension_N, s->mutable_tension_n());
  if (!sample.checked) return;
  s->set_collision(sample.in_collision);
  s->set_clearance_m(sample.clearance_m);
}

void simulationToProto(const Model& m, const std::string& scene, const CheckedSimulationReport& r,
                       v1::SimulateResponse* out) {
  out->set_model(m.name);
  if (r.checked) out->set_scene(scene);
  for (const auto& v : m.dynamic) out->add_dynamic_names(v.name);
  for (const auto& v : m.kinematic) out->add_kinematic_names(v.name);
  for (const auto& s : m.strings) out->add_string_names(s.name);
  out->set_first_collision_t_s(r.first_collision_t_s);
  out->set_min_clearance_m(r.min_clearance_m);
  out->set_min_stage_clearance_m(r.min_stage_clearance_m);
  if (r.checked) {
    out->set_samples_in_collision(r.samples_in_collision);
    if (r.first_collision >= 0)
      contactToProto(r.first_collision_pair, out->mutable_first_collision());
    if (r.min_clearance_sample >= 0) {
      out->set_min_clearance_t_s(r.min_clearance_t_s);
      contactToProto(r.min_clearance_pair, out->mutable_min_clearance_pair());
    }
    if (r.min_stage_clearance_sample >= 0)
      contactToProto(r.min_stage_clearance_pair, out->mutable_min_stage_clearance_pair());
  }
  out->set_stopped_at_collision(r.stopped_at_collision);
  const SimulationSummary& sum = r.simulation;
  out->set_steps(sum.steps);
  out->set_us_per_step(sum.us_per_step);
  out->set_newton_iterations_mean(sum.newton_iterations_mean);
  out->set_max_violation_m(sum.max_violation_m);
  out->set_min_tension_n(sum.min_tension_N);
  out->set_energy_start_j(sum.energy_start_J);
  out->set_energy_end_j(sum.energy_end_J);
}

// ---- Field names -------------------------------------------------------------------------------

std::string protoField(const std::string& field) {
  // Library prefix -> proto prefix.
  static const std::pair<const char*, const char*> kPrefixes[] = {
      {"options.planner", "planner"},
      {"options.time_limit_s", "time_limit_s"},
      {"options.rate_hz", "output_rate_hz"},
      {"options.step_s", "step_s"},
      {"options.params", "parameters"},
      {"start_inputs", "start.input_values"},
      {"start.positions", "start.position_values"},
      {"start.velocities", "start.velocity_values"},
      {"goal.points", "goal.points.targets"},
  };
  for (const auto& [library, proto] : kPrefixes) {
    const std::string prefix = library;
    if (field.compare(0, prefix.size(), prefix) == 0 &&
        (field.size() == prefix.size() || field[prefix.size()] == '.' ||
         field[prefix.size()] == '['))
      return proto + field.substr(prefix.size());
  }
  return field;
}

std::string describeForClient(const FieldError& e) {
  return protoField(e.field()) + ": " + e.problem();
}

}  // namespace marionette::wire
