// SPDX-License-Identifier: BSD-3-Clause
// Answers out (and back, for the CLI): model and scene descriptions, plans, progress events,
// simulation results.
#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/dynamics.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/service/wire.hpp"
#include "wire_support.hpp"

namespace marionette::wire {

using namespace detail;

// ---- Descriptions ------------------------------------------------------------------------------

v1::ModelDescription describeModel(const Model& model, const Eigen::VectorXd* rest_q) {
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
  std::vector<Eigen::Vector3d> at_rest;
  if (rest_q) {
    DynamicsData data(model);
    pointsInStage(model, data, model.configuration(*rest_q, model.defaultInputs()), at_rest);
  }
  for (std::size_t i = 0; i < model.points.size(); ++i) {
    const Point& p = model.points[i];
    v1::NamedPoint* o = d.add_points();
    o->set_name(p.name);
    o->set_frame(frameName(p.frame));
    toProto(p.position_m, o->mutable_position_m());
    if (rest_q) toProto(at_rest[i], o->mutable_rest_position_m());
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

// ---- Plans -------------------------------------------------------------------------------------

namespace {

// The scalars of a plan, of its statistics and of a progress report, with their proto fields:
// read from a const object, written to a mutable one.
template <class P>
ScalarFields<P> planScalars(P& p) {
  return {{"model", &p.model},
          {"scene", &p.scene},
          {"goal", &p.goal},
          {"start", &p.start},
          {"seed", &p.seed},
          {"message", &p.message},
          {"collision_free", &p.collision_free},
          {"first_collision", &p.first_collision},
          {"collision_pair", &p.collision_pair},
          {"goal_sample", &p.goal_sample},
          {"goal_distance_min", &p.goal_distance_min},
          {"min_clearance_m", &p.min_clearance_m},
          {"min_stage_clearance_m", &p.min_stage_clearance_m},
          {"min_stage_clearance_sample", &p.min_stage_clearance_sample},
          {"clearance_margin_m", &p.clearance_margin_m},
          {"max_violation_m", &p.max_violation_m},
          {"min_tension_n", &p.min_tension_N}};
}

template <class S>
ScalarFields<S> statisticsScalars(S& s) {
  return {{"planner", &s.planner},
          {"planning_time_s", &s.planning_time_s},
          {"verification_time_s", &s.verification_time_s},
          {"total_time_s", &s.total_time_s},
          {"propagations", &s.propagations},
          {"collision_checks", &s.collision_checks},
          {"tree_states", &s.tree_states},
          {"roadmap_vertices", &s.roadmap_vertices},
          {"roadmap_edges", &s.roadmap_edges},
          {"edges_validated", &s.edges_validated},
          {"edges_rejected", &s.edges_rejected},
          {"roadmap_build_time_s", &s.roadmap_build_time_s},
          {"best_goal_distance", &s.best_goal_distance},
          {"search_ended", &s.search_ended}};
}

template <class Q>
ScalarFields<Q> qualityScalars(Q& q) {
  return {{"duration_s", &q.duration_s},
          {"input_jerk_rms_overall", &q.input_jerk_rms_overall},
          {"string_catches", &q.string_catches},
          {"snaps", &q.snaps},
          {"first_snap_string", &q.first_snap_string},
          {"first_snap_t_s", &q.first_snap_t_s},
          {"peak_tension_ratio", &q.peak_tension_ratio},
          {"peak_tension_string", &q.peak_tension_string},
          {"peak_tension_t_s", &q.peak_tension_t_s},
          {"settle_s", &q.settle_s},
          {"residual_kinetic_energy_j", &q.residual_kinetic_energy_J},
          {"residual_joint_speed_rms", &q.residual_joint_speed_rms},
          {"swing_joint", &q.swing_joint},
          {"swing_joint_speed_rms", &q.swing_joint_speed_rms}};
}

template <class P>
ScalarFields<P> progressScalars(P& p) {
  return {{"phase", &p.phase},
          {"elapsed_s", &p.elapsed_s},
          {"propagations", &p.propagations},
          {"states", &p.states},
          {"best_goal_distance", &p.best_goal_distance},
          {"iteration", &p.iteration},
          {"cost", &p.cost},
          {"constraint_violation", &p.constraint_violation}};
}

}  // namespace

void planToProto(const Plan& p, v1::PlanResponse* out) {
  out->Clear();
  scalarsToProto(planScalars(p), *out);
  scalarsToProto(statisticsScalars(p.stats), *out->mutable_statistics());
  out->set_outcome(p.outcome == PlanOutcome::Exact         ? v1::OUTCOME_EXACT
                   : p.outcome == PlanOutcome::Approximate ? v1::OUTCOME_APPROXIMATE
                                                           : v1::OUTCOME_NOT_FOUND);
  v1::InputSequence* in = out->mutable_inputs();
  for (const auto& n : p.input_names) in->add_variables(n);
  in->set_rate_hz(p.rate_hz);
  in->mutable_values()->Reserve(static_cast<int>(p.inputs.size()));
  for (int i = 0; i < p.inputs.rows(); ++i)
    for (int j = 0; j < p.inputs.cols(); ++j) in->add_values(p.inputs(i, j));
  for (const auto& n : p.predicted.state_names) out->add_state_names(n);
  for (const auto& n : p.predicted.string_names) out->add_string_names(n);
  matrixToProto(p.predicted.states, out->mutable_states());
  matrixToProto(p.predicted.tensions_N, out->mutable_tensions_n());
  vectorToProto(p.predicted.clearance_m, out->mutable_clearance_m());
  vectorToProto(p.predicted.stage_clearance_m, out->mutable_stage_clearance_m());
  vectorToProto(p.predicted.goal_distance, out->mutable_goal_distance());
  if (!p.predicted.contact_names.empty()) {
    for (const auto& n : p.predicted.contact_names) out->add_contact_names(n);
    matrixToProto(p.predicted.contact_normal_N, out->mutable_contact_normal_n());
    matrixToProto(p.predicted.contact_friction_N, out->mutable_contact_friction_n());
  }
  for (const auto& v : p.limit_violations) out->add_limit_violations(v);
  if (p.quality.measured) {
    scalarsToProto(qualityScalars(p.quality), *out->mutable_quality());
    vectorToProto(p.quality.input_jerk_rms, out->mutable_quality()->mutable_input_jerk_rms());
    // The proto's quality repeats the motion's clearances (the plan's own).
    out->mutable_quality()->set_min_clearance_m(p.min_clearance_m);
    out->mutable_quality()->set_min_stage_clearance_m(p.min_stage_clearance_m);
  }
  if (p.outcome == PlanOutcome::Approximate) {
    if (!p.collision_free) out->add_shortfalls(v1::SHORTFALL_COLLISION);
    if (!p.limit_violations.empty()) out->add_shortfalls(v1::SHORTFALL_INPUT_LIMITS);
    if (p.goal_sample < 0) out->add_shortfalls(v1::SHORTFALL_GOAL_NOT_REACHED);
    if (p.min_stage_clearance_m < p.clearance_margin_m)
      out->add_shortfalls(v1::SHORTFALL_CLEARANCE_MARGIN);
  }
  if (!p.gains.empty()) {
    v1::TrackingGains* g = out->mutable_gains();
    g->set_rate_hz(1.0 / p.gains.dt_s);
    for (const auto& [name, value] : control::weightFields(p.gains.weights))
      (*g->mutable_weights())[name] = value;
    for (const Eigen::MatrixXd& K : p.gains.K) matrixToProto(K, g->add_k());
  }
  performanceToProto(p, out);
}

Plan planFromProto(const v1::PlanResponse& r) {
  Plan p;
  scalarsFromProto(r, planScalars(p));
  scalarsFromProto(r.statistics(), statisticsScalars(p.stats));
  p.outcome = r.outcome() == v1::OUTCOME_EXACT         ? PlanOutcome::Exact
              : r.outcome() == v1::OUTCOME_APPROXIMATE ? PlanOutcome::Approximate
                                                       : PlanOutcome::NotFound;
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
  p.predicted.state_names.assign(r.state_names().begin(), r.state_names().end());
  p.predicted.string_names.assign(r.string_names().begin(), r.string_names().end());
  p.predicted.states = matrixFromProto(r.states(), "plan.states");
  p.predicted.tensions_N = matrixFromProto(r.tensions_n(), "plan.tensions_n");
  p.predicted.clearance_m = vectorFromProto(r.clearance_m());
  p.predicted.stage_clearance_m = vectorFromProto(r.stage_clearance_m());
  p.predicted.goal_distance = vectorFromProto(r.goal_distance());
  p.predicted.contact_names.assign(r.contact_names().begin(), r.contact_names().end());
  p.predicted.contact_normal_N = matrixFromProto(r.contact_normal_n(), "plan.contact_normal_n");
  p.predicted.contact_friction_N =
      matrixFromProto(r.contact_friction_n(), "plan.contact_friction_n");
  for (const auto& [forces, what] :
       {std::pair{&p.predicted.contact_normal_N, "contact_normal_n"},
        std::pair{&p.predicted.contact_friction_N, "contact_friction_n"}})
    if (!p.predicted.contact_names.empty() &&
        (forces->rows() != n || forces->cols() != long(p.predicted.contact_names.size())))
      throw std::invalid_argument(std::string("plan.") + what + ": not " + std::to_string(n) +
                                  " x " + std::to_string(p.predicted.contact_names.size()) +
                                  " (samples x contact_names)");
  if (r.has_quality()) {
    p.quality.measured = true;
    scalarsFromProto(r.quality(), qualityScalars(p.quality));
    p.quality.input_jerk_rms = vectorFromProto(r.quality().input_jerk_rms());
  }
  for (auto [size, what] : {std::pair<long, const char*>{p.predicted.states.rows(), "states"},
                            {p.predicted.tensions_N.rows(), "tensions_n"},
                            {p.predicted.clearance_m.size(), "clearance_m"},
                            {p.predicted.stage_clearance_m.size(), "stage_clearance_m"},
                            {p.predicted.goal_distance.size(), "goal_distance"}})
    if (size != n)
      throw std::invalid_argument(std::string("plan.") + what + ": " + std::to_string(size) +
                                  " rows for " + std::to_string(n) + " input samples");
  p.limit_violations.assign(r.limit_violations().begin(), r.limit_violations().end());
  performanceFromProto(r, p);
  if (r.has_gains() && r.gains().k_size() > 0) {
    const v1::TrackingGains& g = r.gains();
    p.gains.dt_s = 1.0 / g.rate_hz();
    for (const auto& [name, value] : control::weightFields(p.gains.weights))
      if (g.weights().count(name)) *value = g.weights().at(name);
    const long cols =
        2 * (static_cast<long>(p.predicted.state_names.size()) + nk);  // (q, p, rho, rho_prev)
    if (g.rate_hz() != p.rate_hz || g.k_size() != n - 1)
      throw std::invalid_argument("plan.gains: " + std::to_string(g.k_size()) + " gains at " +
                                  formatNumber(g.rate_hz()) + " Hz for " + std::to_string(n) +
                                  " samples at " + formatNumber(p.rate_hz) + " Hz");
    for (int k = 0; k < g.k_size(); ++k) {
      p.gains.K.push_back(matrixFromProto(g.k(k), "plan.gains.k"));
      if (p.gains.K.back().rows() != nk || p.gains.K.back().cols() != cols)
        throw std::invalid_argument("plan.gains.k[" + std::to_string(k) + "]: not " +
                                    std::to_string(nk) + " x " + std::to_string(cols));
    }
  }
  return p;
}

// ---- Progress ----------------------------------------------------------------------------------

void progressToProto(const PlanProgress& p, v1::PlanProgress* out) {
  scalarsToProto(progressScalars(p), *out);
}

void optimizationToProto(const OptimizationReport& r, v1::OptimizationReport* out) {
  out->set_improved(r.improved);
  out->set_method(r.method);
  out->set_iterations(r.iterations);
  out->set_time_s(r.time_s);
  out->set_message(r.message);
}

OptimizationReport optimizationReportFromProto(const v1::OptimizationReport& r) {
  OptimizationReport out;
  out.improved = r.improved();
  out.method = r.method();
  out.iterations = r.iterations();
  out.time_s = r.time_s();
  out.message = r.message();
  return out;
}

void optimizationOptionsToProto(const OptimizationOptions& o, v1::Optimization* out) {
  out->set_enabled(true);
  out->set_margin_m(o.margin_m);
  out->set_settle_s(o.settle_s);
  out->set_time_limit_s(o.time_limit_s);
  out->set_max_iterations(o.max_iterations);
  out->set_method(optimizerName(o));
  OptimizationWeights w = o.weights;
  for (const std::string& name : OptimizationWeights::names())
    (*out->mutable_weights())[name] = *w.byName(name);
}

PlanProgress progressFromProto(const v1::PlanProgress& e) {
  PlanProgress p;
  scalarsFromProto(e, progressScalars(p));
  return p;
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
  if (row.contact_force_N) {
    vectorToProto(*row.contact_force_N, s->mutable_contact_normal_n());
    const Eigen::VectorXd friction = row.contact_friction_N->colwise().norm().transpose();
    vectorToProto(friction, s->mutable_contact_friction_n());
  }
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

}  // namespace marionette::wire
