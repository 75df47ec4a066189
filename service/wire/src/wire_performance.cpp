// SPDX-License-Identifier: BSD-3-Clause
// Perform's request, and a performance's targets and tracking in the plan, on the wire.
#include <cmath>
#include <cstring>
#include <map>

#include "marionette/performance/performance_error.hpp"
#include "marionette/performance/program.hpp"
#include "marionette/service/wire.hpp"
#include "wire_support.hpp"

namespace marionette::wire {

using namespace detail;

namespace {

// A library field of the performance's options or edits in PerformRequest's words.
std::string performField(const std::string& field) {
  static const std::pair<const char*, const char*> kPrefixes[] = {
      {"optimization.weights", "weights"},  // checkOptimizationOptions' words
      {"options.dynamics", "kinematic_only"},
      {"options.retarget", "no_retarget"},
      {"options.", ""},
      {"targets", "clips"},
  };
  for (const auto& [library, proto] : kPrefixes) {
    const std::size_t n = std::strlen(library);
    if (library[n - 1] == '.' ? field.compare(0, n, library) == 0 : fieldWithin(field, library))
      return proto + field.substr(n);
  }
  return field;
}

void trackingToProto(const std::vector<PointTracking>& from,
                     google::protobuf::RepeatedPtrField<v1::PointTracking>* out) {
  for (const PointTracking& t : from) {
    v1::PointTracking* p = out->Add();
    p->set_point(t.point);
    p->set_rms_m(t.rms_m);
    p->set_max_m(t.max_m);
    p->set_max_at_s(t.max_at_s);
  }
}

std::vector<PointTracking> trackingFromProto(
    const google::protobuf::RepeatedPtrField<v1::PointTracking>& from) {
  std::vector<PointTracking> out;
  for (const v1::PointTracking& p : from) out.push_back({p.point(), p.rms_m(), p.max_m(), p.max_at_s()});
  return out;
}

void spansToProto(const std::vector<UnreachableSpan>& from,
                  google::protobuf::RepeatedPtrField<v1::UnreachableSpan>* out) {
  for (const UnreachableSpan& u : from) {
    v1::UnreachableSpan* s = out->Add();
    s->set_point(u.point);
    s->set_from_s(u.from_s);
    s->set_to_s(u.to_s);
    s->set_worst_m(u.worst_m);
    s->set_reason(u.reason);
  }
}

std::vector<UnreachableSpan> spansFromProto(
    const google::protobuf::RepeatedPtrField<v1::UnreachableSpan>& from) {
  std::vector<UnreachableSpan> out;
  for (const v1::UnreachableSpan& s : from)
    out.push_back({s.point(), s.from_s(), s.to_s(), s.worst_m(), s.reason()});
  return out;
}

}  // namespace

PerformanceRequest performRequestFromProto(const v1::PerformRequest& r, ModelPtr model,
                                           CollisionModelPtr collision,
                                           double max_time_limit_s) {
  PerformanceRequest req;
  req.model = std::move(model);
  req.collision = collision;

  std::vector<Clip> clips;
  for (int i = 0; i < r.clips_size(); ++i) {
    const v1::PerformanceClip& c = r.clips(i);
    const std::string field = "clips[" + std::to_string(i) + "]";
    Clip clip;
    switch (c.format()) {
      case v1::PerformanceClip::FORMAT_MARKERS: clip.format = ClipFormat::Markers; break;
      case v1::PerformanceClip::FORMAT_PCR: clip.format = ClipFormat::Pcr; break;
      case v1::PerformanceClip::FORMAT_BVH: clip.format = ClipFormat::Bvh; break;
      case v1::PerformanceClip::FORMAT_KEYFRAMES: clip.format = ClipFormat::Keyframes; break;
      default: invalid(field + ".format", "not set (markers, pcr, bvh or keyframes)");
    }
    if (!c.map_yaml().empty() && clip.format != ClipFormat::Bvh)
      invalid(field + ".map_yaml", "only a bvh clip takes a retarget map");
    clip.text = c.text();
    clip.source = field + ".text";
    clip.map_text = c.map_yaml();
    clip.map_source = field + ".map_yaml";
    clips.push_back(std::move(clip));
  }
  if (clips.empty()) invalid("clips", "no clip to play (at least one)");

  PerformanceEdits edits;
  auto number = [&](const char* field, double value, double& into) {
    requireFinite(field, value);
    if (value != 0) into = value;
  };
  number("blend_s", r.blend_s(), edits.blend_s);
  number("from_s", r.from_s(), edits.from_s);
  number("to_s", r.to_s(), edits.to_s);
  number("speed", r.speed(), edits.speed);
  if (r.loop() != 0) edits.loop = r.loop();
  edits.disable.assign(r.disable().begin(), r.disable().end());
  try {
    PerformanceProgram program = assemblePerformance(req.model, clips, edits);
    req.targets = std::move(program.targets);
    req.options.disable = std::move(program.disable);
  } catch (const PerformanceFileError& e) {  // names clips[i].text or .map_yaml, line and field
    throw RequestError(RequestError::Code::InvalidArgument, e.what());
  } catch (const FieldError& e) {
    std::string field = e.field();  // "clips[0].map": a bvh clip of a model without a map
    if (e.argument() == "clips" && field.size() > 4 && field.compare(field.size() - 4, 4, ".map") == 0)
      field += "_yaml";
    invalid(field, e.problem());
  }

  PerformanceOptions& o = req.options;
  number("margin_m", r.margin_m(), o.margin_m);
  number("tolerance_m", r.tolerance_m(), o.tolerance_m);
  number("rate_hz", r.rate_hz(), o.rate_hz);
  number("key_rate_hz", r.key_rate_hz(), o.key_rate_hz);
  number("knots_per_s", r.knots_per_s(), o.knots_per_s);
  number("settle_s", r.settle_s(), o.settle_s);
  number("time_limit_s", r.time_limit_s(), o.time_limit_s);
  number("reach_tolerance_m", r.reach_tolerance_m(), o.reach_tolerance_m);
  o.retarget = !r.no_retarget();
  if (r.has_calm_weight()) {
    requireFinite("calm_weight", r.calm_weight());
    o.calm_weight = r.calm_weight();
  }
  o.free_points.assign(r.free_points().begin(), r.free_points().end());
  if (o.time_limit_s == 0) o.time_limit_s = max_time_limit_s;  // unset: the operator's deadline
  if (o.time_limit_s > max_time_limit_s)
    invalid("time_limit_s", "must be at most " + formatNumber(max_time_limit_s) +
                                " s (the server's maximum), got " + formatNumber(o.time_limit_s));
  o.dynamics = !r.kinematic_only();
  weightsFromProto(r.weights(), "weights", o.weights);
  try {
    checkPerformanceOptions(*req.model, o);
    checkPerformanceTargets(*req.model, req.targets, o);
  } catch (const FieldError& e) {
    invalid(performField(e.field()), e.problem());
  }
  return req;
}

void detail::performanceToProto(const Plan& p, v1::PlanResponse* out) {
  for (const std::string& n : p.predicted.point_names) out->add_point_names(n);
  if (p.predicted.points_m.size()) matrixToProto(p.predicted.points_m, out->mutable_points_m());
  if (!p.performance.targets.points.empty() || !p.performance.targets.variables.empty()) {
    v1::PerformanceTargets* t = out->mutable_targets();
    t->set_source(p.performance.targets.source);
    for (const std::string& n : p.performance.targets.points) t->add_names(n);
    matrixToProto(p.performance.targets.positions_m, t->mutable_positions_m());
    for (const std::string& n : p.performance.targets.variables) t->add_variable_names(n);
    matrixToProto(p.performance.targets.values, t->mutable_variables());
  }
  if (!p.performance.tracking.empty()) {
    v1::PerformanceTracking* t = out->mutable_tracking();
    trackingToProto(p.performance.tracking.kinematic, t->mutable_kinematic());
    trackingToProto(p.performance.tracking.dynamic, t->mutable_dynamic());
    spansToProto(p.performance.tracking.unreachable, t->mutable_unreachable());
    trackingToProto(p.performance.tracking.retarget, t->mutable_retarget());
    spansToProto(p.performance.tracking.retarget_spans, t->mutable_retarget_spans());
    trackingToProto(p.performance.tracking.variables, t->mutable_variables());
    trackingToProto(p.performance.tracking.untargeted, t->mutable_untargeted());
  }
}

void detail::performanceFromProto(const v1::PlanResponse& r, Plan& p) {
  const long n = p.inputs.rows();
  p.predicted.point_names.assign(r.point_names().begin(), r.point_names().end());
  p.predicted.points_m = matrixFromProto(r.points_m(), "plan.points_m");
  if (p.predicted.points_m.size() &&
      (p.predicted.points_m.rows() != n ||
       p.predicted.points_m.cols() != 3 * long(p.predicted.point_names.size())))
    throw std::invalid_argument("plan.points_m: not " + std::to_string(n) + " x " +
                                std::to_string(3 * p.predicted.point_names.size()));
  if (r.has_targets()) {
    const v1::PerformanceTargets& t = r.targets();
    TargetMotion& m = p.performance.targets;
    m.source = t.source();
    m.points.assign(t.names().begin(), t.names().end());
    m.positions_m = matrixFromProto(t.positions_m(), "plan.targets.positions_m");
    m.variables.assign(t.variable_names().begin(), t.variable_names().end());
    m.values = matrixFromProto(t.variables(), "plan.targets.variables");
    if (m.positions_m.cols() != 3 * long(m.points.size()) ||
        m.values.cols() != long(m.variables.size()) ||
        (m.values.size() && m.values.rows() != m.positions_m.rows()))
      throw std::invalid_argument("plan.targets: the matrices do not fit the names");
    m.times_s.resize(m.positions_m.rows());
    for (std::size_t i = 0; i < m.times_s.size(); ++i) m.times_s[i] = i / p.rate_hz;
  }
  if (r.has_tracking()) {
    const v1::PerformanceTracking& t = r.tracking();
    p.performance.tracking.kinematic = trackingFromProto(t.kinematic());
    p.performance.tracking.dynamic = trackingFromProto(t.dynamic());
    p.performance.tracking.unreachable = spansFromProto(t.unreachable());
    p.performance.tracking.retarget = trackingFromProto(t.retarget());
    p.performance.tracking.retarget_spans = spansFromProto(t.retarget_spans());
    p.performance.tracking.variables = trackingFromProto(t.variables());
    p.performance.tracking.untargeted = trackingFromProto(t.untargeted());
  }
}

}  // namespace marionette::wire
