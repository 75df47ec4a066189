// SPDX-License-Identifier: BSD-3-Clause
// What a roadmap depends on, serialised canonically and hashed: the roadmap cache's key, the
// name of its file in a roadmap folder, and the check that a saved roadmap fits.
#include <cstdint>
#include <iomanip>
#include <sstream>

#include "marionette/models/field_error.hpp"
#include "marionette/search/roadmap.hpp"
#include "roadmap_graph.hpp"

namespace marionette {
namespace {

// Exact and canonical: every double as a hexfloat, every field in a fixed order, separated.
class Canonical {
 public:
  Canonical& operator<<(double x) {
    os_ << std::hexfloat << x << ' ';
    return *this;
  }
  Canonical& operator<<(int x) {
    os_ << std::dec << x << ' ';
    return *this;
  }
  Canonical& operator<<(const std::string& s) {
    os_ << std::dec << s.size() << ':' << s << ' ';  // length-prefixed: no separator ambiguity
    return *this;
  }
  Canonical& operator<<(const Eigen::Vector3d& v) { return *this << v.x() << v.y() << v.z(); }
  Canonical& operator<<(const Eigen::Matrix3d& m) {
    for (int i = 0; i < 9; ++i) *this << m(i / 3, i % 3);
    return *this;
  }
  Canonical& operator<<(const Eigen::Isometry3d& T) {
    return *this << Eigen::Matrix3d(T.linear()) << Eigen::Vector3d(T.translation());
  }
  // A shape's parameters; a mesh is serialised by its triangles (mesh()), not by its path.
  Canonical& operator<<(const Shape& s) {
    return *this << static_cast<int>(s.type) << s.radius_m << s.length_m << s.size_m << s.normal
                 << s.offset_m << s.mesh_scale;
  }
  Canonical& mesh(const TriangleMesh& m) {
    tag("mesh") << static_cast<int>(m.vertices.size());
    for (const auto& v : m.vertices) *this << v;
    *this << static_cast<int>(m.triangles.size());
    for (const auto& t : m.triangles) *this << t.x() << t.y() << t.z();
    return *this;
  }
  Canonical& tag(const char* name) {
    os_ << name << ' ';
    return *this;
  }
  std::string str() const { return os_.str(); }

 private:
  std::ostringstream os_;
};

// The model, its link meshes' triangles as the collision model read them.
void serialise(Canonical& c, const Model& m, const CollisionModel& collision) {
  c.tag("model") << m.name << m.gravity_mps2 << m.stage_pose;
  c.tag("dynamic") << static_cast<int>(m.dynamic.size());
  for (const auto& v : m.dynamic)
    c << v.name << v.initial << v.damping << v.limit.lower << v.limit.upper << v.limit.stiffness
      << v.limit.damping << v.limit.softening << v.spring.stiffness << v.spring.neutral;
  c.tag("kinematic") << static_cast<int>(m.kinematic.size());
  for (const auto& v : m.kinematic)
    c << v.name << v.default_value << v.lower << v.upper << v.max_speed << v.max_accel;
  c.tag("frames") << static_cast<int>(m.frames.size());
  for (const auto& f : m.frames)
    c << f.name << f.parent << static_cast<int>(f.type) << f.offset << f.axis << f.variable;
  c.tag("masses") << static_cast<int>(m.masses.size());
  for (const auto& x : m.masses) c << x.name << x.frame << x.mass_kg << x.com_m << x.inertia_kgm2;
  c.tag("points") << static_cast<int>(m.points.size());
  for (const auto& p : m.points) c << p.name << p.frame << p.position_m;
  c.tag("strings") << static_cast<int>(m.strings.size());
  for (const auto& s : m.strings)
    c << s.name << s.puppet_frame << s.puppet_point_m << s.rig_frame << s.rig_point_m
      << s.length_variable << s.length_m;
  c.tag("geometry") << static_cast<int>(m.geometry.size());
  for (const auto& g : m.geometry) c << g.name << g.frame << g.shape << g.pose;
  for (int link = 0; link < collision.linkCount(); ++link)
    if (const TriangleMeshPtr mesh = collision.linkMesh(link)) c.mesh(*mesh);
  c.tag("allowed") << static_cast<int>(m.allowed_collisions.size());
  for (const auto& [a, b] : m.allowed_collisions) c << a << b;
  // (The links touching one another: the edges' dynamics when the collision model touches.)
  const SelfContactSpec& sc = m.self_contact;
  c.tag("self_contact") << int(sc.enabled) << sc.friction << static_cast<int>(sc.excluded.size());
  for (const auto& [a, b] : sc.excluded) c << a << b;
  c << static_cast<int>(sc.pair_friction.size());
  for (const auto& p : sc.pair_friction) c << p.frame_a << p.frame_b << p.friction;
}

void serialise(Canonical& c, const Scene& sc) {
  c.tag("scene") << sc.name << static_cast<int>(sc.obstacles.size());
  for (const auto& o : sc.obstacles) {
    c << o.name << o.shape << o.pose << int(o.contact) << o.friction;
    if (o.mesh) c.mesh(*o.mesh);
  }
  c.tag("bounds") << static_cast<int>(sc.bounds.has_value());
  if (sc.bounds) c << sc.bounds->min_m << sc.bounds->max_m;
}

}  // namespace

// FNV-1a, 128 bits.  (unsigned __int128: GCC's and Clang's; __extension__ tells -Wpedantic so.)
std::string roadmap::hash128(const std::string& text) {
  __extension__ typedef unsigned __int128 u128;
  const u128 prime = (u128(1) << 88) + 0x13B;
  u128 h = (u128(0x6c62272e07bb0142ull) << 64) | 0x62b821756295c58dull;
  for (unsigned char ch : text) h = (h ^ ch) * prime;
  std::ostringstream os;
  os << std::hex << std::setfill('0') << std::setw(16) << static_cast<std::uint64_t>(h >> 64)
     << std::setw(16) << static_cast<std::uint64_t>(h);
  return os.str();
}

std::string RoadmapOptions::describe() const {
  std::ostringstream os;
  os << std::setprecision(17) << "vertices=" << vertices << " neighbours=" << neighbours
     << " build_time_limit_s=" << build_time_limit_s << " seed=" << seed << " step_s=" << step_s
     << " slowdown=" << slowdown << " settle_max_s=" << settle_max_s
     << " settle_tolerance=" << settle_tolerance << " settle_energy_J=" << settle_energy_J;
  return os.str();
}

void RoadmapOptions::check() const {
  const auto require = [](bool ok, const char* member, const std::string& problem) {
    if (!ok) throw FieldError(std::string("options.roadmap.") + member, problem);
  };
  require(vertices >= 2 && static_cast<std::size_t>(vertices) <= kMaxRoadmapVertices, "vertices",
          "must be within [2, " + std::to_string(kMaxRoadmapVertices) + "]");
  require(neighbours >= 1 && neighbours <= 1000, "neighbours", "must be within [1, 1000]");
  require(build_time_limit_s > 0 && build_time_limit_s <= 1e6, "build_time_limit_s",
          "must be within (0, 1e6] s");
  require(step_s >= 1e-4 && step_s <= 0.1, "step_s", "must be within [1e-4, 0.1] s");
  require(slowdown >= 1 && slowdown <= 100, "slowdown", "must be within [1, 100]");
  require(settle_max_s >= 0 && settle_max_s <= 600, "settle_max_s", "must be within [0, 600] s");
  require(settle_tolerance > 0 && settle_tolerance <= 10, "settle_tolerance",
          "must be within (0, 10] m");
  require(settle_energy_J > 0 && settle_energy_J <= 1e3, "settle_energy_J",
          "must be within (0, 1000] J");
}

std::string RestPoseRoadmap::fingerprint(const CollisionModel& collision,
                                         const RoadmapOptions& options) {
  Canonical c;
  serialise(c, collision.model(), collision);
  serialise(c, collision.scene());
  const CollisionOptions& co = collision.options();
  c.tag("collision") << co.string_radius_m << int(co.check_strings) << int(co.check_self)
                     << int(co.check_strings_vs_links) << int(co.check_bounds)
                     << int(co.stage_pose.has_value()) << int(co.touch_contact_surfaces)
                     << co.touch_tolerance_m;
  if (co.stage_pose) c << *co.stage_pose;
  c.tag("roadmap") << options.describe();
  return roadmap::hash128(c.str());
}

}  // namespace marionette
