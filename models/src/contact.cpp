// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/contact.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/shape.hpp"

namespace marionette {
namespace {

// Moved by the puppet's joints alone: a contact row's gradient has no rig part.
bool puppetOnly(const Model& model, int frame) {
  if (frame < 0 || !model.frame_moved_by_dynamic[frame]) return false;
  const std::vector<int>& chain = model.frame_variable_chain[frame];
  return std::all_of(chain.begin(), chain.end(), [&](int v) { return model.isDynamic(v); });
}

// Drops the points that coincide with an earlier one wherever the puppet is (two capsules'
// ends at the joint between them: an elbow), keeping the larger radius.  Two such rows would be
// the same constraint twice, and the step's Newton matrix singular when both touch.  Compared at
// two configurations: the initial guesses, and each joint turned or moved by 0.37 from them;
// within a micrometre (a model file's rpy of 1.5707963 leaves an elbow's two ends 3 nm apart).
constexpr double kSamePoint_m = 1e-6;
void mergeCoincident(const Model& model, std::vector<ContactPoint>& points) {
  DynamicsData d(model);
  std::vector<std::vector<Eigen::Vector3d>> at(2);
  Eigen::VectorXd q(model.nq());
  for (int k = 0; k < 2; ++k) {
    q << model.initialDynamic().array() + 0.37 * k, model.defaultInputs();
    forwardKinematics(model, d, q);
    for (const ContactPoint& p : points) at[k].push_back(pointPosition(d, p.frame, p.local_m));
  }
  std::vector<ContactPoint> kept;
  std::vector<std::size_t> kept_index;
  for (std::size_t i = 0; i < points.size(); ++i) {
    bool merged = false;
    for (std::size_t j = 0; j < kept.size() && !merged; ++j) {
      const std::size_t o = kept_index[j];
      if ((at[0][i] - at[0][o]).norm() < kSamePoint_m &&
          (at[1][i] - at[1][o]).norm() < kSamePoint_m) {
        ContactPoint& k = kept[j];
        if (points[i].radius_m != k.radius_m || !k.radius_on_frame_m.empty()) {
          // Each frame's own end, the kept point's first.
          if (k.radius_on_frame_m.empty()) k.radius_on_frame_m.emplace_back(k.frame, k.radius_m);
          auto own = std::find_if(k.radius_on_frame_m.begin(), k.radius_on_frame_m.end(),
                                  [&](const auto& e) { return e.first == points[i].frame; });
          if (own == k.radius_on_frame_m.end())
            k.radius_on_frame_m.emplace_back(points[i].frame, points[i].radius_m);
          else
            own->second = std::max(own->second, points[i].radius_m);
        }
        k.radius_m = std::max(k.radius_m, points[i].radius_m);
        if (points[i].frame != kept[j].frame &&
            std::find(kept[j].shared_with.begin(), kept[j].shared_with.end(), points[i].frame) ==
                kept[j].shared_with.end())
          kept[j].shared_with.push_back(points[i].frame);
        merged = true;
      }
    }
    if (!merged) {
      kept.push_back(points[i]);
      kept_index.push_back(i);
    }
  }
  points = std::move(kept);
}

}  // namespace

std::vector<ContactPoint> contactPoints(const Model& model) {
  std::vector<ContactPoint> out;
  for (const Geometry& g : model.geometry) {
    if (!puppetOnly(model, g.frame)) continue;
    const Shape& s = g.shape;
    if (s.type == ShapeType::Sphere) {
      out.push_back({g.name, g.frame, g.pose.translation(), s.radius_m, g.name, {}, {}});
    } else if (s.type == ShapeType::Capsule) {
      // Along the capsule's local z axis, centred (shape.hpp).
      const Eigen::Vector3d half = g.pose.linear() * Eigen::Vector3d(0, 0, 0.5 * s.length_m);
      out.push_back(
          {g.name, g.frame, g.pose.translation() + half, s.radius_m, g.name + "+z", {}, {}});
      out.push_back(
          {g.name, g.frame, g.pose.translation() - half, s.radius_m, g.name + "-z", {}, {}});
    }
  }
  mergeCoincident(model, out);
  return out;
}

bool contactBody(const std::string& name, int frame, const Eigen::Isometry3d& pose,
                 const Shape& shape, ContactBody& body) {
  body = ContactBody{name, frame, pose, Eigen::Vector3d::Zero(), 0.0};
  if (shape.type == ShapeType::Sphere) {
    body.radius_m = shape.radius_m;
  } else if (shape.type == ShapeType::Capsule) {
    body.radius_m = shape.radius_m;
    body.half_m.z() = 0.5 * shape.length_m;
  } else if (shape.type == ShapeType::Box) {
    body.half_m = 0.5 * shape.size_m;
  } else {
    return false;
  }
  return true;
}

std::vector<ContactBody> contactBodies(const Model& model) {
  std::vector<ContactBody> out;
  ContactBody body;
  for (const Geometry& g : model.geometry)
    if (puppetOnly(model, g.frame) && contactBody(g.name, g.frame, g.pose, g.shape, body))
      out.push_back(body);
  return out;
}

SelfContactRule::SelfContactRule(const Model& model)
    : enabled_(model.self_contact.enabled), link_parent_(model.frames.size(), -1) {
  auto sorted = [](int a, int b) { return std::make_pair(std::min(a, b), std::max(a, b)); };
  for (const auto& [a, b] : model.allowed_collisions) apart_.insert(sorted(a, b));
  for (const auto& [a, b] : model.self_contact.excluded) apart_.insert(sorted(a, b));
  std::vector<char> carries(model.frames.size(), 0);
  for (const Geometry& g : model.geometry)
    if (g.frame >= 0) carries[g.frame] = 1;
  // (Parents come before children: each frame's answer from its parent's.)
  for (std::size_t f = 0; f < model.frames.size(); ++f) {
    const int parent = model.frames[f].parent;
    if (parent >= 0) link_parent_[f] = carries[parent] ? parent : link_parent_[parent];
  }
}

bool SelfContactRule::touches(int a, int b) const {
  if (a == b || a < 0 || b < 0 || !enabled_) return false;
  // Adjacent (the collision checker's rule), allowed to overlap, or excluded.
  if (link_parent_[a] == b || link_parent_[b] == a) return false;
  return apart_.count(std::make_pair(std::min(a, b), std::max(a, b))) == 0;
}

bool framesTouch(const Model& model, int a, int b) {
  return SelfContactRule(model).touches(a, b);
}

void addSelfContacts(const Model& model, Contacts& contacts) {
  contacts.bodies.clear();
  contacts.self.clear();
  if (!model.self_contact.enabled) return;
  contacts.bodies = contactBodies(model);
  const SelfContactRule rule(model);
  // Per pair of frames, the answer (-1 unknown), so that the rule runs once per pair.
  const std::size_t n = model.frames.size();
  std::vector<signed char> known(n * n, -1);
  auto touches = [&](int a, int b) {
    signed char& k = known[static_cast<std::size_t>(a) * n + b];
    if (k < 0) k = rule.touches(a, b) ? 1 : 0;
    return k == 1;
  };
  for (std::size_t p = 0; p < contacts.points.size(); ++p)
    for (std::size_t b = 0; b < contacts.bodies.size(); ++b) {
      const ContactPoint& point = contacts.points[p];
      const int fb = contacts.bodies[b].frame;
      int fa = touches(point.frame, fb) ? point.frame : -1;
      for (std::size_t k = 0; fa < 0 && k < point.shared_with.size(); ++k)
        if (touches(point.shared_with[k], fb)) fa = point.shared_with[k];
      if (fa < 0 || point.frame == fb) continue;
      if (static_cast<int>(contacts.self.size()) == kMaxSelfContacts)
        throw FieldError("contacts",
                         "more than " + std::to_string(kMaxSelfContacts) +
                             " pairs of the model's sphere and capsule ends and its links may "
                             "touch; exclude pairs (contacts.exclude) or turn self-contact off "
                             "(contacts.self: false)");
      contacts.self.push_back({static_cast<int>(p), static_cast<int>(b),
                               model.self_contact.frictionOf(fa, fb), point.radiusOn(fa)});
    }
  // The capsules' middles (a segment row per pair: its point's index -1).
  for (std::size_t a = 0; a < contacts.bodies.size(); ++a)
    for (std::size_t b = 0; b < contacts.bodies.size(); ++b) {
      const int fa = contacts.bodies[a].frame, fb = contacts.bodies[b].frame;
      if (!segmentRowFor(contacts.bodies, static_cast<int>(a), static_cast<int>(b)) ||
          !touches(fa, fb))
        continue;
      if (static_cast<int>(contacts.self.size()) == kMaxSelfContacts)
        throw FieldError("contacts", "more than " + std::to_string(kMaxSelfContacts) +
                                         " pairs of the model's links may touch; exclude pairs "
                                         "(contacts.exclude) or turn self-contact off "
                                         "(contacts.self: false)");
      SelfContact row{-1, static_cast<int>(b), model.self_contact.frictionOf(fa, fb),
                      contacts.bodies[a].radius_m};
      row.segment = static_cast<int>(a);
      contacts.self.push_back(row);
    }
  if (contacts.self.empty()) contacts.bodies.clear();
}

bool segmentRowFor(const std::vector<ContactBody>& bodies, int capsule, int body) {
  const ContactBody& c = bodies[capsule];
  const ContactBody& b = bodies[body];
  if (!isCapsule(c) || c.frame == kStageFrame || capsule == body || b.half_m.isZero())
    return false;
  return !(isCapsule(b) && body < capsule);
}

SegmentGap segmentCoreGap(const ContactBody& body, const Eigen::Vector3d& a,
                          const Eigen::Vector3d& b, double radius_m) {
  const Eigen::Vector3d u = b - a;
  const Eigen::Vector3d& h = body.half_m;
  auto at = [&](double t) { return Eigen::Vector3d(a + t * u); };
  auto outside2 = [&](double t) {
    const Eigen::Vector3d x = at(t);
    return (x - x.cwiseMax(-h).cwiseMin(h)).squaredNorm();
  };
  SegmentGap out;
  const double radii = radius_m + body.radius_m;
  // Outside: |x(t) - clamp(x(t))|^2 = sum over the axes beyond a face of (a_i -+ h_i + t u_i)^2,
  // a quadratic between the points where x(t) crosses a face's plane.
  std::array<double, 8> cuts{0.0, 1.0};
  std::size_t n = 2;
  for (int i = 0; i < 3; ++i)
    for (const double side : {-1.0, 1.0})
      if (u[i] != 0.0)
        if (double t = (side * h[i] - a[i]) / u[i]; t > 0.0 && t < 1.0) {
          std::size_t k = n++;  // (in order: insertion)
          for (; k > 0 && cuts[k - 1] > t; --k) cuts[k] = cuts[k - 1];
          cuts[k] = t;
        }
  double best_t = 0.0, best = outside2(0.0);
  for (std::size_t k = 0; k + 1 < n; ++k) {
    const double t0 = cuts[k], t1 = cuts[k + 1];
    if (!(t1 > t0)) continue;
    const Eigen::Vector3d mid = at(0.5 * (t0 + t1));
    double A = 0.0, B = 0.0;
    for (int i = 0; i < 3; ++i) {
      if (std::abs(mid[i]) <= h[i]) continue;
      const double c = mid[i] > 0.0 ? a[i] - h[i] : a[i] + h[i];
      A += u[i] * u[i];
      B += c * u[i];
    }
    const double t = A > 0.0 ? std::clamp(-B / A, t0, t1) : t0;
    if (const double v = outside2(t); v < best) {
      best = v;
      best_t = t;
    }
  }
  if (const double v = outside2(1.0); v < best) {
    best = v;
    best_t = 1.0;
  }
  out.t = best_t;
  out.x_core = at(best_t);
  if (best > 0.0) {
    const Eigen::Vector3d away = out.x_core - out.x_core.cwiseMax(-h).cwiseMin(h);
    const double distance = away.norm();
    out.normal_core = away / distance;
    out.gap_m = radii - distance;
    return out;
  }
  // Inside: the depth min_i (h_i - |x_i(t)|) is the least of h_i -+ x_i(t), concave: greatest
  // at an end or where two of the six lines meet.
  auto depth = [&](double t, int* axis) {
    const Eigen::Vector3d x = at(t);
    return (h - x.cwiseAbs()).minCoeff(axis);
  };
  int axis = 0;
  double best_depth = depth(best_t, &axis);
  auto consider = [&](double t) {
    if (!(t >= 0.0 && t <= 1.0)) return;
    int i = 0;
    if (const double v = depth(t, &i); v > best_depth) {
      best_depth = v;
      best_t = t;
    }
  };
  consider(0.0);
  consider(1.0);
  for (int l = 0; l < 6; ++l)
    for (int m = l + 1; m < 6; ++m) {
      // Line l: h_i - s_i x_i(t) = (h_i - s_i a_i) - s_i u_i t.
      const int i = l / 2, j = m / 2;
      const double si = l % 2 ? -1.0 : 1.0, sj = m % 2 ? -1.0 : 1.0;
      const double slope = si * u[i] - sj * u[j];
      if (slope != 0.0) consider(((h[i] - si * a[i]) - (h[j] - sj * a[j])) / slope);
    }
  out.t = best_t;
  out.x_core = at(best_t);
  best_depth = depth(best_t, &axis);
  out.normal_core = Eigen::Vector3d::Unit(axis) * (out.x_core[axis] < 0.0 ? -1.0 : 1.0);
  out.gap_m = radii + best_depth;
  return out;
}

double segmentRowGap(const ContactBody& body, const SegmentGap& middle,
                     const Eigen::Vector3d& a_core, const Eigen::Vector3d& b_core, double radius_m,
                     double margin_m) {
  if (!(middle.t > 0.0 && middle.t < 1.0)) return -std::numeric_limits<double>::infinity();
  const double ends =
      std::max(coreGap(body, a_core, radius_m).gap_m, coreGap(body, b_core, radius_m).gap_m);
  return middle.gap_m > ends + margin_m ? middle.gap_m : -std::numeric_limits<double>::infinity();
}

double ContactPoint::radiusOn(int on_frame) const {
  for (const auto& [f, r] : radius_on_frame_m)
    if (f == on_frame) return r;
  return radius_m;
}

std::string Contacts::rowName(int r) const {
  const int surface_rows = surfaceRows();
  if (r >= surface_rows && self[r - surface_rows].segment >= 0) {
    const SelfContact& pair = self[r - surface_rows];
    return bodies[pair.body].name + "/" + bodies[pair.segment].name;
  }
  const ContactPoint& p =
      r < surface_rows ? points[r % points.size()] : points[self[r - surface_rows].point];
  const std::string& what = r < surface_rows ? surfaces[r / points.size()].name
                                             : bodies[self[r - surface_rows].body].name;
  return what + "/" + (p.name.empty() ? p.link : p.name);
}

std::string contactsProblem(const Model& model, const Contacts& contacts) {
  for (std::size_t i = 0; i < contacts.points.size(); ++i) {
    const ContactPoint& p = contacts.points[i];
    const std::string field = "contacts.points[" + std::to_string(i) + "]";
    if (p.frame < 0 || p.frame >= static_cast<int>(model.frames.size()))
      return field + ".frame: " + std::to_string(p.frame) + " is not a frame of the model";
    if (!puppetOnly(model, p.frame))
      return field + ".frame: '" + model.frames[p.frame].name +
             "' is not moved by the puppet's joints alone";
    if (!p.local_m.allFinite()) return field + ".local_m: not finite";
    if (const std::string problem = coordinateProblem(p.local_m); !problem.empty())
      return field + ".local_m: " + problem;
    if (!(p.radius_m >= 0.0 && p.radius_m <= kStageRange_m))
      return field + ".radius_m: must be in [0, " +
             std::to_string(static_cast<int>(kStageRange_m)) + "] m";
  }
  for (std::size_t s = 0; s < contacts.surfaces.size(); ++s) {
    const ContactSurface& surface = contacts.surfaces[s];
    const std::string field = "contacts.surfaces[" + std::to_string(s) + "]";
    if (!surface.normal.allFinite() || std::abs(surface.normal.norm() - 1.0) > 1e-9)
      return field + ".normal: must be a unit vector";
    if (!std::isfinite(surface.offset_m)) return field + ".offset_m: not finite";
    if (!(surface.friction >= 0.0 && std::isfinite(surface.friction)))
      return field + ".friction: must be a finite number >= 0";
  }
  for (std::size_t b = 0; b < contacts.bodies.size(); ++b) {
    const ContactBody& body = contacts.bodies[b];
    const std::string field = "contacts.bodies[" + std::to_string(b) + "]";
    if (body.frame != kStageFrame &&
        (body.frame < 0 || body.frame >= static_cast<int>(model.frames.size()) ||
         !puppetOnly(model, body.frame)))
      return field + ".frame: not the stage nor a frame the puppet's joints alone move";
    if (!body.pose.matrix().allFinite() || !coordinateProblem(body.pose.translation()).empty())
      return field + ".pose: not finite or beyond the stage's range";
    if (!(body.half_m.minCoeff() >= 0.0 && body.half_m.maxCoeff() <= kStageRange_m))
      return field + ".half_m: must be in [0, " + std::to_string(static_cast<int>(kStageRange_m)) +
             "] m";
    if (!(body.radius_m >= 0.0 && body.radius_m <= kStageRange_m))
      return field + ".radius_m: must be in [0, " +
             std::to_string(static_cast<int>(kStageRange_m)) + "] m";
  }
  for (std::size_t i = 0; i < contacts.self.size(); ++i) {
    const SelfContact& c = contacts.self[i];
    const std::string field = "contacts.self[" + std::to_string(i) + "]";
    if (c.body < 0 || c.body >= static_cast<int>(contacts.bodies.size()))
      return field + ".body: not a contact body";
    if (c.segment >= 0) {
      if (c.segment >= static_cast<int>(contacts.bodies.size()) ||
          !isCapsule(contacts.bodies[c.segment]) || c.point != -1)
        return field + ".segment: not a capsule's body (with point -1)";
      if (contacts.bodies[c.segment].frame == contacts.bodies[c.body].frame)
        return field + ": a capsule and a body on one frame";
    } else {
      if (c.point < 0 || c.point >= static_cast<int>(contacts.points.size()))
        return field + ".point: not a contact point";
      if (contacts.points[c.point].frame == contacts.bodies[c.body].frame)
        return field + ": a point and a body on one frame";
    }
    if (!(c.friction >= 0.0 && std::isfinite(c.friction)))
      return field + ".friction: must be a finite number >= 0";
    if (!(c.radius_m >= 0.0 && c.radius_m <= kStageRange_m))
      return field + ".radius_m: must be in [0, " +
             std::to_string(static_cast<int>(kStageRange_m)) + "] m";
  }
  return "";
}

Eigen::Matrix<double, 3, 2> tangentBasis(const Eigen::Vector3d& normal, const Eigen::Vector3d& axis,
                                         const Eigen::Vector3d& fallback) {
  const Eigen::Vector3d& a = std::abs(normal.dot(axis)) < 0.9 ? axis : fallback;
  Eigen::Matrix<double, 3, 2> t;
  t.col(0) = (a - normal.dot(a) * normal).normalized();
  t.col(1) = normal.cross(t.col(0));
  return t;
}

ContactSurface floorSurface(const Model& model) {
  // Stage from world: x_s = R x_w + t; the floor's solid side z_s <= 0 is
  // (R^T e_z) . x_w <= -t_z.
  ContactSurface floor;
  floor.name = "floor";
  floor.normal = model.stage_pose.linear().transpose() * Eigen::Vector3d::UnitZ();
  floor.offset_m = -model.stage_pose.translation().z();
  return floor;
}

}  // namespace marionette
