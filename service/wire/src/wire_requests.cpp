// SPDX-License-Identifier: BSD-3-Clause
// Requests in: goals, starts, input sequences, plan and simulation requests, every field checked
// and named in errors; library field paths in the proto's words.
#include <algorithm>
#include <cstring>
#include <map>

#include "marionette/common/yaml_document.hpp"
#include "marionette/service/wire.hpp"
#include "wire_support.hpp"

namespace marionette::wire {

using namespace detail;

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
    for (const auto& [name, v] : values) requireFinite(f + fieldKey(name), v);
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

namespace {
// The field a start input came from: start.inputs["x"] or start.input_values["x"].
std::string startInputField(const v1::Start& start, const std::string& name) {
  return (start.input_values().count(name) ? "start.input_values" : "start.inputs") +
         fieldKey(name);
}
}  // namespace

StartSpec startSpecFromProto(const Model& model, const v1::Start& start, Eigen::VectorXd* inputs) {
  const int nd = model.nd(), nk = model.nk();
  Eigen::VectorXd rho = model.defaultInputs();
  if (start.inputs_size() && !start.input_values().empty())
    invalid("start", "give inputs or input_values, not both");
  if (start.inputs_size()) {
    if (start.inputs_size() != nk)
      invalid("start.inputs", std::to_string(start.inputs_size()) + " values for the " +
                                  std::to_string(nk) + " kinematic variables of '" + model.name +
                                  "' (" + joinNames(itemNames(model.kinematic)) + ")");
    rho = vectorFromProto(start.inputs());
  }
  for (const auto& [name, v] :
       std::map<std::string, double>(start.input_values().begin(), start.input_values().end()))
    rho[kinematicIndex(model, name, "start.input_values")] = v;
  for (int i = 0; i < nk; ++i) {
    const KinematicVariable& kv = model.kinematic[i];
    const std::string f = startInputField(start, kv.name);
    requireFinite(f, rho[i]);
    if (rho[i] < kv.lower || rho[i] > kv.upper)
      invalid(f, formatNumber(rho[i]) + " is outside its range [" + formatNumber(kv.lower) + ", " +
                     formatNumber(kv.upper) + "]");
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
    requireFinite("start.position_values" + fieldKey(name), v);
    spec.positions.emplace_back(name, v);
  }
  for (const auto& [name, v] : std::map<std::string, double>(start.velocity_values().begin(),
                                                             start.velocity_values().end())) {
    dynamicIndex(model, name, "start.velocity_values");
    requireFinite("start.velocity_values" + fieldKey(name), v);
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
      text += (i ? "," : "") + model.kinematic[i].name + "=" + formatNumber(rho[i]);
  }
  if (!request.start.positions.empty()) {
    std::string q = "q:";
    for (std::size_t i = 0; i < request.start.positions.size(); ++i)
      q += (i ? "," : "") + request.start.positions[i].first + "=" +
           formatNumber(request.start.positions[i].second);
    text = text.empty() ? q : text + " " + q;
  }
  request.start_text = text.empty() ? "rest" : text;
}

void startAndGoalToProto(const PlanRequest& request, const Plan& plan, v1::PlanResponse* out) {
  v1::Start* start = out->mutable_start_state();
  start->Clear();
  for (Eigen::Index i = 0; i < request.start_inputs.size(); ++i)
    start->add_inputs(request.start_inputs[i]);
  if (plan.predicted.states.rows() > 0)
    for (Eigen::Index j = 0; j < plan.predicted.states.cols(); ++j)
      start->add_positions(plan.predicted.states(0, j));
  for (const auto& [name, v] : request.start.velocities)
    (*start->mutable_velocity_values())[name] = v;
  goalToProto(request.goal, out->mutable_goal_spec());
  out->mutable_goal_spec()->set_tolerance(request.goal.effectiveTolerance());
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
  if (in.times_s_size()) {
    if (in.times_s_size() != rows)
      invalid(field + ".times_s", std::to_string(in.times_s_size()) + " times for " +
                                      std::to_string(rows) + " rows of values");
  } else if (rows > 0) {
    requireFinite(field + ".rate_hz", in.rate_hz());
    if (!(in.rate_hz() > 0)) invalid(field + ".rate_hz", "must be > 0 (or give times_s)");
  }
  // Bounded before anything is allocated: one sample is a row of every kinematic variable.
  if (rows > InputSchedule::maxRows(model))
    invalid(field + ".values", std::to_string(rows) + " samples; at most " +
                                   std::to_string(InputSchedule::maxRows(model)));
  s.times_s.resize(rows);
  s.values.resize(rows, model.nk());
  for (int i = 0; i < rows; ++i) {
    s.times_s[i] = in.times_s_size() ? in.times_s(i) : i / in.rate_hz();
    s.values.row(i) = s.defaults.transpose();
    for (int j = 0; j < cols; ++j) s.values(i, column_index[j]) = in.values(i * cols + j);
  }
  // The one set of rules (the CLI's CSV files get the same), worded as this message's fields.
  if (const auto p = s.problem(model)) {
    if (p->row < 0) invalid(field + ".values", p->message);
    const std::string row = "[" + std::to_string(p->row) + "]";
    if (p->variable < 0) invalid(field + ".times_s" + row, p->message);
    invalid(field + ".values" + row + fieldKey(model.kinematic[p->variable].name), p->message);
  }
  return s;
}

// ---- Sizes ------------------------------------------------------------------------------------

namespace {
void checkSizes(const google::protobuf::Message& m, const std::string& prefix) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection& r = *m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r.ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    const std::string name = prefix + f->name();
    const std::size_t limit = f->name() == "yaml" || f->name() == "map_yaml" ? kMaxDescriptionBytes
                              : f->name() == "text"                          ? kMaxInlineClipBytes
                                                                             : kMaxNameBytes;
    auto checkString = [&](const std::string& text, const std::string& field) {
      if (text.size() > limit)
        invalid(field, std::to_string(text.size()) + " bytes; at most " + std::to_string(limit));
    };
    if (f->is_repeated()) {
      const int n = r.FieldSize(m, f);
      if (f->type() == FieldDescriptor::TYPE_STRING || f->type() == FieldDescriptor::TYPE_MESSAGE) {
        if (n > kMaxListEntries)
          invalid(name, std::to_string(n) + " entries; at most " + std::to_string(kMaxListEntries));
        for (int i = 0; i < n; ++i) {
          const std::string entry = name + "[" + std::to_string(i) + "]";
          if (f->type() == FieldDescriptor::TYPE_STRING)
            checkString(r.GetRepeatedString(m, f, i), entry);
          else
            checkSizes(r.GetRepeatedMessage(m, f, i), entry + ".");
        }
      }
    } else if (f->type() == FieldDescriptor::TYPE_STRING) {
      checkString(r.GetString(m, f), name);
    } else if (f->type() == FieldDescriptor::TYPE_MESSAGE) {
      checkSizes(r.GetMessage(m, f), name + ".");
    }
  }
}
}  // namespace

void checkRequestSizes(const google::protobuf::Message& request) {
  checkSizes(request, "");
}

// ---- Plan requests -----------------------------------------------------------------------------

PlanRequest planRequestFromProto(const v1::PlanRequest& r, ModelPtr model,
                                 CollisionModelPtr collision, double max_time_limit_s) {
  PlanRequest req;
  req.model = std::move(model);
  req.collision = collision;
  const Model& m = *req.model;
  PlannerOptions& opt = req.options;

  // Zero or empty fields keep the library's defaults.
  if (!r.planner().empty()) opt.planner = r.planner();
  for (const auto& [k, v] : r.parameters()) opt.parameters[k] = v;
  // A deadline on the search; unset, the server's maximum (the operator's deadline).
  requireFinite("time_limit_s", r.time_limit_s());
  if (!(r.time_limit_s() >= 0) || r.time_limit_s() > max_time_limit_s)
    invalid("time_limit_s", "must be in [0, " + formatNumber(max_time_limit_s) + "] s, got " +
                                formatNumber(r.time_limit_s()));
  opt.time_limit_s = r.time_limit_s() != 0 ? r.time_limit_s() : max_time_limit_s;
  opt.seed = r.seed() ? r.seed() : 1;
  opt.roadmap_as_built = r.roadmap_as_built();
  if (r.max_propagations() > 10'000'000'000ull)
    invalid("max_propagations", "must be at most 1e10, got " + std::to_string(r.max_propagations()));
  opt.max_propagations = static_cast<long>(r.max_propagations());
  requireFinite("output_rate_hz", r.output_rate_hz());
  if (r.output_rate_hz() != 0) opt.output_rate_hz = r.output_rate_hz();
  requireFinite("step_s", r.step_s());
  if (r.step_s() != 0) opt.step_s = r.step_s();

  applyStart(m, r.start(), req);
  if (!r.has_goal()) invalid("goal", "is not set");
  req.goal = goalFromProto(r.goal(), "goal");
  try {
    checkGoal(req.model, req.goal, collision->scene());
  } catch (const FieldError& e) {
    // The library names GoalSpec's fields; the proto's depend on the goal's kind.
    std::string field = e.field();
    const std::string values = "goal.values";
    if (fieldWithin(field, values))
      field =
          (req.goal.kind == GoalSpec::Kind::RestOf ? "goal.rest_of.inputs" : "goal.joints.values") +
          field.substr(values.size());
    invalid(protoField(field), e.problem());
  }
  return req;
}

OptimizationOptions optimizationFromProto(const v1::Optimization& o, double max_time_limit_s) {
  OptimizationOptions out;
  if (o.margin_m() != 0) out.margin_m = o.margin_m();
  if (o.settle_s() != 0) out.settle_s = o.settle_s();
  // Unset: the server's maximum, the deadline its operator set (the iterations decide first).
  out.time_limit_s = o.time_limit_s() != 0 ? o.time_limit_s() : max_time_limit_s;
  if (o.max_iterations() != 0) out.max_iterations = o.max_iterations();
  if (!parseOptimizer(o.method(), out))
    invalid("optimization.method",
            "expected \"transcription\", \"interior-point\" or \"ipopt\", got \"" +
                printableBytes(o.method(), 64) + "\"");
  weightsFromProto(o.weights(), "optimization.weights", out.weights);
  try {
    checkOptimizationOptions(out);
  } catch (const FieldError& e) {
    invalid(protoField(e.field()), e.problem());
  }
  if (out.time_limit_s > max_time_limit_s)
    invalid("optimization.time_limit_s",
            "must be at most " + formatNumber(max_time_limit_s) + " s (the server's maximum)");
  return out;
}

void detail::weightsFromProto(const google::protobuf::Map<std::string, double>& weights,
                              const std::string& field, OptimizationWeights& out) {
  for (const auto& [name, value] : std::map<std::string, double>(weights.begin(), weights.end())) {
    double* w = out.byName(name);
    if (!w)
      invalid(field + fieldKey(name),
              "unknown weight (" + joinNames(OptimizationWeights::names()) + ")");
    *w = value;
  }
}

control::LqrWeights gainsWeightsFromProto(const v1::GainsRequest& g) {
  control::LqrWeights out;
  std::vector<std::string> known;
  for (const auto& [name, value] : control::weightFields(out)) known.push_back(name);
  for (const auto& [name, value] :
       std::map<std::string, double>(g.weights().begin(), g.weights().end())) {
    bool found = false;
    for (const auto& [field, weight] : control::weightFields(out))
      if (name == field) {
        *weight = value;
        found = true;
      }
    if (!found)
      invalid("gains.weights" + fieldKey(name), "unknown weight (" + joinNames(known) + ")");
  }
  try {
    control::checkLqrWeights(out);
  } catch (const FieldError& e) {
    invalid("gains.weights" + fieldKey(e.field()), e.problem());
  }
  return out;
}

// ---- Simulations -------------------------------------------------------------------------------

SimulationCall simulationCallFromProto(const v1::SimulateRequest& req, const Model& m) {
  SimulationCall call;
  SimulationOptions& opt = call.options;
  auto bounded = [](const std::string& field, double x, double dflt, double hi) {
    if (!std::isfinite(x) || x < 0 || x > hi)
      invalid(field, "must be in [0, " + formatNumber(hi) + "], got " + formatNumber(x));
    return x == 0 ? dflt : x;
  };
  // 0: the inputs' sample period when they come at a rate that is a valid step (a plan's inputs
  // were verified at dt = 1 / rate_hz, for output rates of 1 to 1000 Hz: re-simulated so, they
  // give its states), else 0.01 s.
  const double sample_period_s = req.inputs().times_s_size() == 0 && req.inputs().rate_hz() > 0
                                     ? 1.0 / req.inputs().rate_hz()
                                     : 0.0;
  const double default_dt_s =
      sample_period_s >= kMinSimulationStep_s && sample_period_s <= kMaxSimulationStep_s
          ? sample_period_s
          : 0.01;
  opt.dt_s = bounded("dt_s", req.dt_s(), default_dt_s, kMaxSimulationStep_s);
  if (opt.dt_s < kMinSimulationStep_s) invalid("dt_s", "must be at least 1e-5 s");
  opt.damping_scale = bounded("damping_scale", req.damping_scale(), 1.0, 1e3);
  Eigen::VectorXd rho0;
  opt.start = startSpecFromProto(m, req.start(), &rho0);
  call.inputs =
      req.has_inputs() ? inputsFromProto(m, req.inputs(), "inputs") : InputSchedule::constant(m);
  if (req.start().inputs_size() || !req.start().input_values().empty()) {
    if (req.has_inputs()) {
      // The inputs at t = 0 are the sequence's first sample: start inputs given too (a plan's
      // start_state sent back) must be the same.
      const Eigen::VectorXd first = call.inputs.at(0.0);
      for (int k = 0; k < m.nk(); ++k) {
        const std::string& name = m.kinematic[k].name;
        const bool given = req.start().inputs_size() || req.start().input_values().count(name);
        if (given && std::abs(rho0[k] - first[k]) > 1e-9)
          invalid(startInputField(req.start(), name),
                  formatNumber(rho0[k]) + " is not the first sample of `inputs` (" +
                      formatNumber(first[k]) +
                      "): the inputs start there; leave it out or "
                      "give the same");
      }
    } else {
      call.inputs.defaults = rho0;
    }
  }
  const double default_duration = call.inputs.times_s.empty() ? 1.0 : call.inputs.times_s.back();
  opt.duration_s = bounded("duration_s", req.duration_s(), default_duration, 3600.0);
  if (opt.duration_s > 3600.0)  // the default: inputs at a tiny rate end late
    invalid("duration_s",
            "0 means the inputs' last time, " + formatNumber(opt.duration_s) + " s: beyond 3600 s");
  const double steps = opt.duration_s / opt.dt_s;
  if (steps > kMaxSimulationSteps)
    invalid("duration_s", formatNumber(std::ceil(steps)) +
                              " steps of dt_s; a request may ask for at most " +
                              std::to_string(kMaxSimulationSteps));
  call.with_scene = req.scene().source_case() != v1::SceneRef::SOURCE_NOT_SET;
  if (req.stop_on_collision() && !call.with_scene) invalid("stop_on_collision", "needs a scene");
  call.check.stop_at_first_collision = req.stop_on_collision();
  call.with_points = req.with_points();
  // Each point of each sample is ~30 bytes of answer: bounded as the samples are.
  if (call.with_points && std::ceil(steps) * static_cast<double>(m.points.size()) >
                              static_cast<double>(kMaxSimulationPointSamples))
    invalid("with_points", formatNumber(std::ceil(steps)) + " steps of " +
                               std::to_string(m.points.size()) +
                               " points; a request may ask for at most " +
                               std::to_string(kMaxSimulationPointSamples) + " point positions");
  return call;
}

// ---- Field names -------------------------------------------------------------------------------

std::string protoField(const std::string& field) {
  // PlanRequest's options are the proto request's own fields; its start and goal lists are
  // messages of named values.
  static const std::pair<const char*, const char*> kPrefixes[] = {
      {"start_inputs", "start.input_values"},
      {"start.positions", "start.position_values"},
      {"start.velocities", "start.velocity_values"},
      {"goal.points", "goal.points.targets"},
  };
  const std::string options = "options.";
  if (field.compare(0, options.size(), options) == 0) return field.substr(options.size());
  for (const auto& [library, proto] : kPrefixes)
    if (fieldWithin(field, library)) return proto + field.substr(std::strlen(library));
  return field;
}

std::string describeForClient(const FieldError& e) {
  return protoField(e.field()) + ": " + e.problem();
}

}  // namespace marionette::wire
