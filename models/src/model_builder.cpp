// SPDX-License-Identifier: BSD-3-Clause
// ModelBuilder (model.hpp): items added one by one, then validated and resolved into a Model.
#include "model_builder.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include "marionette/common/text.hpp"

namespace marionette {

namespace {
std::string lineNote(const SourceRef& s) {
  return s.line > 0 ? " (line " + std::to_string(s.line) + ")" : std::string();
}
}  // namespace

// ---- Builder ------------------------------------------------------------------------------

ModelBuilder::ModelBuilder(std::string name) : impl_(std::make_unique<Impl>()) {
  impl_->name_ = std::move(name);
}
ModelBuilder::~ModelBuilder() = default;
// A moved-from builder is empty: copying it, or into it, gives a builder with nothing added.
ModelBuilder::ModelBuilder(const ModelBuilder& other)
    : impl_(other.impl_ ? std::make_unique<Impl>(*other.impl_) : std::make_unique<Impl>()) {}
ModelBuilder& ModelBuilder::operator=(const ModelBuilder& other) {
  if (this != &other)
    impl_ = other.impl_ ? std::make_unique<Impl>(*other.impl_) : std::make_unique<Impl>();
  return *this;
}
ModelBuilder::ModelBuilder(ModelBuilder&&) noexcept = default;
ModelBuilder& ModelBuilder::operator=(ModelBuilder&&) noexcept = default;

ModelBuilder& ModelBuilder::setDescription(std::string text) {
  impl_->description_ = std::move(text);
  return *this;
}
ModelBuilder& ModelBuilder::setSourceFile(std::string path) {
  impl_->source_file_ = std::move(path);
  return *this;
}
ModelBuilder& ModelBuilder::setStagePose(const Eigen::Isometry3d& pose) {
  impl_->stage_pose_ = pose;
  return *this;
}

ModelBuilder& ModelBuilder::setGravity(double g) {
  impl_->gravity_ = g;
  return *this;
}
ModelBuilder& ModelBuilder::addDynamic(DynamicVariable v) {
  impl_->dynamic_.push_back(std::move(v));
  return *this;
}
ModelBuilder& ModelBuilder::addKinematic(KinematicVariable v) {
  impl_->kinematic_.push_back(std::move(v));
  return *this;
}
ModelBuilder& ModelBuilder::addFixedFrame(const std::string& name, const std::string& parent,
                                          const Eigen::Isometry3d& offset, SourceRef src) {
  impl_->frames_.push_back(
      {name, parent, "", JointType::Fixed, offset, Eigen::Vector3d::UnitZ(), src});
  return *this;
}
ModelBuilder& ModelBuilder::addJointFrame(const std::string& name, const std::string& parent,
                                          JointType type, const Eigen::Vector3d& axis,
                                          const std::string& variable, SourceRef src) {
  impl_->frames_.push_back(
      {name, parent, variable, type, Eigen::Isometry3d::Identity(), axis, src});
  return *this;
}
ModelBuilder& ModelBuilder::addMass(const std::string& name, const std::string& frame,
                                    double mass_kg, const Eigen::Vector3d& com_m,
                                    const Eigen::Matrix3d& inertia, SourceRef src) {
  impl_->masses_.push_back({name, frame, mass_kg, com_m, inertia, src});
  return *this;
}
ModelBuilder& ModelBuilder::addPoint(const std::string& name, const std::string& frame,
                                     const Eigen::Vector3d& p, SourceRef src) {
  impl_->points_.push_back({name, frame, p, src});
  return *this;
}
ModelBuilder& ModelBuilder::addString(const std::string& name, const std::string& puppet_frame,
                                      const Eigen::Vector3d& puppet_point,
                                      const std::string& rig_frame,
                                      const Eigen::Vector3d& rig_point,
                                      const std::string& length_variable, double length_m,
                                      SourceRef src) {
  impl_->strings_.push_back(
      {name, puppet_frame, rig_frame, length_variable, puppet_point, rig_point, length_m, src});
  return *this;
}
ModelBuilder& ModelBuilder::addGeometry(Geometry g, const std::string& frame) {
  impl_->geometry_.push_back({std::move(g), frame});
  return *this;
}
ModelBuilder& ModelBuilder::allowCollision(const std::string& a, const std::string& b,
                                           SourceRef src) {
  impl_->allowed_.push_back({a, b, src});
  return *this;
}

ModelBuilder& ModelBuilder::setSelfContact(bool enabled, double friction, SourceRef src) {
  impl_->self_contact_ = enabled;
  impl_->self_friction_ = friction;
  impl_->self_contact_src_ = src;
  return *this;
}

ModelBuilder& ModelBuilder::excludeContact(const std::string& a, const std::string& b,
                                           SourceRef src) {
  impl_->contact_excluded_.push_back({a, b, src});
  return *this;
}

ModelBuilder& ModelBuilder::setContactFriction(const std::string& a, const std::string& b,
                                               double friction, SourceRef src) {
  impl_->contact_friction_.push_back({a, b, src, friction});
  return *this;
}

void ModelBuilder::Impl::fail(const SourceRef& src, const std::string& message) const {
  throw ModelError(source_file_, src.line, src.field, message);
}

// build(): validate each kind of item, resolve names into indices (frames ordered parents
// first), then derive the structure the algorithms use (variable chains, stops, ...).
ModelPtr ModelBuilder::build() const {
  return impl_->build();
}

ModelPtr ModelBuilder::Impl::build() const {
  checkCounts();
  auto model = std::make_shared<Model>();
  Model& m = *model;
  m.name = name_;
  m.description = description_;
  m.source_file = source_file_;
  if (!(gravity_ >= 0.0 && gravity_ <= kMaxGravity_mps2))
    fail({"gravity", 0}, "must be between 0 and " + formatNumber(kMaxGravity_mps2) +
                             " m/s^2 (got " + formatNumber(gravity_) + ")");
  m.gravity_mps2 = gravity_;
  if (!stage_pose_.matrix().allFinite()) fail({"stage", 0}, "pose must be finite");
  if (const std::string p = coordinateProblem(stage_pose_.translation()); !p.empty())
    fail({"stage", 0}, p);
  m.stage_pose = stage_pose_;
  buildVariables(m);
  const std::vector<int> variable_frame = buildFrames(m);
  deriveFrameChains(m);
  buildMasses(m);
  buildPoints(m);
  std::vector<char> kinematic_used(m.nk(), 0);
  buildStrings(m, kinematic_used);
  deriveVariableStructure(m, variable_frame, kinematic_used);
  buildGeometry(m);
  return model;
}

void ModelBuilder::Impl::checkCounts() const {
  const auto check = [&](const char* field, std::size_t count, int limit) {
    if (count > static_cast<std::size_t>(limit))
      fail({field, 0},
           std::to_string(count) + " entries; a model holds at most " + std::to_string(limit));
  };
  check("frames", frames_.size(), ModelLimits::kFrames);
  check("dynamic", dynamic_.size(), ModelLimits::kDynamic);
  check("kinematic", kinematic_.size(), ModelLimits::kKinematic);
  check("masses", masses_.size(), ModelLimits::kMasses);
  check("points", points_.size(), ModelLimits::kPoints);
  check("strings", strings_.size(), ModelLimits::kStrings);
  check("geometry", geometry_.size(), ModelLimits::kGeometry);
  check("allowed_collisions", allowed_.size(), ModelLimits::kAllowedCollisions);
  check("contacts.exclude", contact_excluded_.size(), ModelLimits::kAllowedCollisions);
  check("contacts.pairs", contact_friction_.size(), ModelLimits::kAllowedCollisions);
}

// Names of variables, frames, points, strings and masses must be unique within their kind;
// variables share one namespace (dynamic and kinematic).
void ModelBuilder::Impl::checkUnique(NameTable& table, const std::string& kind,
                                     const std::string& n, const SourceRef& src) const {
  if (n.empty()) fail(src, kind + " name is empty");
  auto it = table.find(n);
  if (it != table.end())
    fail(src, "duplicate " + kind + " name '" + n + "' (already used by " + it->second.field +
                  lineNote(it->second) + ")");
  table.emplace(n, src);
}

int ModelBuilder::Impl::frameOf(const Model& m, const std::string& name, const SourceRef& src,
                                const std::string& what) const {
  if (name == "world") return -1;
  const int fi = m.frameIndex(name);
  if (fi < 0) fail(src, what + " frame '" + name + "' does not exist");
  return fi;
}

void ModelBuilder::Impl::buildVariables(Model& m) const {
  NameTable seen;
  for (const auto& v : dynamic_) {
    checkUnique(seen, "variable", v.name, v.source);
    if (!(std::isfinite(v.damping) && v.damping >= 0.0))
      fail(v.source, "damping must be >= 0 (got " + std::to_string(v.damping) + ")");
    if (!std::isfinite(v.initial)) fail(v.source, "initial must be finite");
    const JointLimit& L = v.limit;
    if (!(L.lower <= L.upper))
      fail(v.source, "joint limits: lower (" + std::to_string(L.lower) + ") > upper (" +
                         std::to_string(L.upper) + ")");
    if (!(L.stiffness >= 0.0 && L.damping >= 0.0 && std::isfinite(L.stiffness) &&
          std::isfinite(L.damping)))
      fail(v.source, "joint limit stiffness and damping must be finite and >= 0");
    if (!(v.spring.stiffness >= 0.0 && std::isfinite(v.spring.stiffness) &&
          std::isfinite(v.spring.neutral)))
      fail(v.source, "spring: stiffness must be finite and >= 0, neutral finite");
    if (L.isStop() && !(L.lower < L.upper))
      fail(v.source,
           "joint stops need lower < upper (a joint that cannot move is not a "
           "variable: use a constant transform)");
    m.dynamic.push_back(v);
  }
  for (const auto& v : kinematic_) {
    checkUnique(seen, "variable", v.name, v.source);
    if (!std::isfinite(v.default_value)) fail(v.source, "default must be finite");
    if (!(v.lower <= v.upper))
      fail(v.source, "range: lower (" + std::to_string(v.lower) + ") > upper (" +
                         std::to_string(v.upper) + ")");
    if (v.default_value < v.lower || v.default_value > v.upper)
      fail(v.source, "default " + std::to_string(v.default_value) + " is outside the range [" +
                         std::to_string(v.lower) + ", " + std::to_string(v.upper) + "]");
    if (!(v.max_speed > 0.0)) fail(v.source, "max_speed must be > 0");
    if (!(v.max_accel > 0.0)) fail(v.source, "max_accel must be > 0");
    // Crossing the range as a ramp or a roadmap edge does (a quintic at the limits), and
    // stopping from top speed, within kMaxMove_s.
    const double span = v.upper - v.lower;
    if (std::isfinite(span)) {
      const double by_speed = 15.0 / 8.0 * span / v.max_speed;
      const double by_accel = std::sqrt(10.0 / std::sqrt(3.0) * span / v.max_accel);
      const double longest = std::max(by_speed, by_accel);
      if (!(longest <= kMaxMove_s))
        fail({v.source.field + (by_speed >= by_accel ? ".max_speed" : ".max_accel"),
              v.source.line},
             "'" + v.name + "' takes " + formatNumber(longest, 4) + " s to cross its range [" +
                 formatNumber(v.lower) + ", " + formatNumber(v.upper) + "] at its limits; a " +
                 "move may take at most " + formatNumber(kMaxMove_s) +
                 " s (raise max_speed and max_accel, or narrow the range)");
    }
    if (std::isfinite(v.max_speed) && !(v.max_speed / v.max_accel <= kMaxMove_s))
      fail({v.source.field + ".max_accel", v.source.line},
           "'" + v.name + "' takes " + formatNumber(v.max_speed / v.max_accel, 4) +
               " s to stop from max_speed; at most " + formatNumber(kMaxMove_s) + " s");
    m.kinematic.push_back(v);
  }
}

std::vector<int> ModelBuilder::Impl::buildFrames(Model& m) const {
  const int nq = m.nq();
  // Resolve parents, order parents before children.
  NameTable frame_names;
  std::map<std::string, int> pending_index;
  for (size_t i = 0; i < frames_.size(); ++i) {
    const auto& f = frames_[i];
    if (f.name == "world") fail(f.src, "'world' is reserved for the fixed world frame");
    checkUnique(frame_names, "frame", f.name, f.src);
    pending_index[f.name] = static_cast<int>(i);
  }
  for (const auto& f : frames_) {
    if (!f.parent.empty() && f.parent != "world" && !pending_index.count(f.parent))
      fail(f.src, "parent frame '" + f.parent + "' of frame '" + f.name + "' does not exist");
  }
  std::vector<int> order;                     // pending indices in topological order
  std::vector<int> state(frames_.size(), 0);  // 0 new, 1 visiting, 2 done
  std::function<void(int)> visit = [&](int i) {
    if (state[i] == 2) return;
    if (state[i] == 1)
      fail(frames_[i].src, "frame '" + frames_[i].name + "' is its own ancestor (cycle)");
    state[i] = 1;
    const auto& p = frames_[i].parent;
    if (!p.empty() && p != "world") visit(pending_index.at(p));
    state[i] = 2;
    order.push_back(i);
  };
  for (size_t i = 0; i < frames_.size(); ++i) visit(static_cast<int>(i));

  std::vector<int> variable_frame(nq, -1);
  for (int pi : order) {
    const auto& pf = frames_[pi];
    Frame f;
    f.name = pf.name;
    f.source = pf.src;
    f.parent = (pf.parent.empty() || pf.parent == "world") ? -1 : m.frameIndex(pf.parent);
    f.type = pf.type;
    if (pf.type == JointType::Fixed) {
      if (!pf.offset.matrix().allFinite()) fail(pf.src, "transform must be finite");
      if (const std::string p = coordinateProblem(pf.offset.translation()); !p.empty())
        fail(pf.src, p);
      f.offset = pf.offset;
    } else {
      const double n = pf.axis.norm();
      if (!(n > 1e-12 && std::isfinite(n))) fail(pf.src, "axis must be a non-zero vector");
      f.axis = pf.axis / n;
      const int vi = m.variableIndex(pf.variable);
      if (vi < 0)
        fail(pf.src, "unknown variable '" + pf.variable +
                         "' (declare it under dynamic: or "
                         "kinematic:)");
      if (variable_frame[vi] >= 0)
        fail(pf.src, "variable '" + pf.variable + "' already drives frame '" +
                         m.frames[variable_frame[vi]].name + "'; a variable drives one frame");
      f.variable = vi;
      variable_frame[vi] = static_cast<int>(m.frames.size());
    }
    if (f.type == JointType::Fixed) {
      f.pure_translation = f.offset.linear() == Eigen::Matrix3d::Identity();
    } else {
      for (int k = 0; k < 3; ++k)
        if (std::abs(std::abs(f.axis[k]) - 1.0) < 1e-15) {
          f.axis_index = k;
          f.axis_sign = f.axis[k] > 0 ? 1.0 : -1.0;
        }
    }
    m.frames.push_back(f);
  }
  return variable_frame;
}

void ModelBuilder::Impl::deriveFrameChains(Model& m) const {
  const int nd = m.nd();
  const int nf = static_cast<int>(m.frames.size());
  m.frame_variable_chain.assign(nf, {});
  m.frame_moved_by_dynamic.assign(nf, 0);
  for (int i = 0; i < nf; ++i) {
    const Frame& f = m.frames[i];
    if (f.parent >= 0) m.frame_variable_chain[i] = m.frame_variable_chain[f.parent];
    if (f.variable >= 0) m.frame_variable_chain[i].push_back(f.variable);
    for (int v : m.frame_variable_chain[i]) m.frame_moved_by_dynamic[i] |= v < nd ? 1 : 0;
  }
}

void ModelBuilder::Impl::buildMasses(Model& m) const {
  const int nd = m.nd();
  const int nf = static_cast<int>(m.frames.size());
  auto firstKinematic = [&](int frame) -> int {
    if (frame < 0) return -1;
    for (int v : m.frame_variable_chain[frame])
      if (v >= nd) return v;
    return -1;
  };
  NameTable mass_names;
  m.frame_masses.assign(nf, {});
  for (const auto& pm : masses_) {
    Mass ms;
    ms.name = pm.name.empty() ? pm.frame : pm.name;
    ms.source = pm.src;
    checkUnique(mass_names, "mass", ms.name, pm.src);
    if (pm.frame == "world") fail(pm.src, "a mass cannot be attached to the world frame");
    ms.frame = frameOf(m, pm.frame, pm.src, "mass");
    if (!(std::isfinite(pm.mass) && pm.mass > 0.0))
      fail(pm.src, "mass must be > 0 kg (got " + std::to_string(pm.mass) + ")");
    if (const std::string p = coordinateProblem(pm.com); !p.empty()) fail(pm.src, "com: " + p);
    const Eigen::Matrix3d& I = pm.inertia;
    if (!I.allFinite()) fail(pm.src, "inertia must be finite");
    if ((I - I.transpose()).cwiseAbs().maxCoeff() > 1e-12 * (1.0 + I.cwiseAbs().maxCoeff()))
      fail(pm.src, "inertia must be symmetric");
    Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> es(I);
    const Eigen::Vector3d ev = es.eigenvalues();
    if (!(ev.minCoeff() > 0.0)) {
      std::ostringstream os;
      os << "inertia is not positive definite (principal moments " << ev.transpose() << " kg*m^2)";
      fail(pm.src, os.str());
    }
    // Principal moments of a real body obey the triangle inequality (I1 + I2 >= I3).
    if (ev[0] + ev[1] < ev[2] * (1.0 - 1e-9)) {
      std::ostringstream os;
      os << "inertia violates the triangle inequality (principal moments " << ev.transpose()
         << " kg*m^2): no rigid body has it";
      fail(pm.src, os.str());
    }
    const int kin = firstKinematic(ms.frame);
    if (kin >= 0)
      fail(pm.src, "mass '" + ms.name + "' on frame '" + pm.frame +
                       "' is moved by kinematic variable '" + m.variableName(kin) +
                       "'; the rig is massless, so masses belong to the puppet");
    ms.mass_kg = pm.mass;
    ms.com_m = pm.com;
    ms.inertia_kgm2 = 0.5 * (I + I.transpose());
    m.frame_masses[ms.frame].push_back(static_cast<int>(m.masses.size()));
    m.masses.push_back(ms);
  }
  m.frame_has_mass_below.assign(nf, 0);
  for (int i = nf - 1; i >= 0; --i) {
    if (!m.frame_masses[i].empty()) m.frame_has_mass_below[i] = 1;
    if (m.frame_has_mass_below[i] && m.frames[i].parent >= 0)
      m.frame_has_mass_below[m.frames[i].parent] = 1;
  }
}

void ModelBuilder::Impl::buildPoints(Model& m) const {
  NameTable point_names;
  for (const auto& pp : points_) {
    checkUnique(point_names, "point", pp.name, pp.src);
    Point p;
    p.name = pp.name;
    p.frame = frameOf(m, pp.frame, pp.src, "point");
    if (const std::string problem = coordinateProblem(pp.pos); !problem.empty())
      fail(pp.src, problem);
    p.position_m = pp.pos;
    p.source = pp.src;
    m.points.push_back(p);
  }
}

void ModelBuilder::Impl::buildStrings(Model& m, std::vector<char>& kinematic_used) const {
  const int nd = m.nd();
  NameTable string_names;
  for (const auto& ps : strings_) {
    checkUnique(string_names, "string", ps.name, ps.src);
    String s;
    s.name = ps.name;
    s.source = ps.src;
    s.puppet_frame = frameOf(m, ps.puppet_frame, ps.src, "string '" + ps.name + "' puppet");
    s.rig_frame = frameOf(m, ps.rig_frame, ps.src, "string '" + ps.name + "' rig");
    for (const Eigen::Vector3d* at : {&ps.puppet_point, &ps.rig_point})
      if (const std::string p = coordinateProblem(*at); !p.empty())
        fail(ps.src, std::string(at == &ps.puppet_point ? "puppet" : "rig") + " point: " + p);
    s.puppet_point_m = ps.puppet_point;
    s.rig_point_m = ps.rig_point;
    if (!ps.length_variable.empty()) {
      const int vi = m.variableIndex(ps.length_variable);
      if (vi < 0) fail(ps.src, "length variable '" + ps.length_variable + "' is not declared");
      if (vi < nd)
        fail(ps.src, "length variable '" + ps.length_variable +
                         "' is dynamic; a string length is a kinematic variable or a constant");
      s.length_variable = vi;
      kinematic_used[vi - nd] = 1;
      if (const std::string p = dimensionProblem("the default of its length variable",
                                                 m.kinematic[vi - nd].default_value);
          !p.empty())
        fail(ps.src, p);
    } else {
      if (const std::string p = dimensionProblem("length", ps.length); !p.empty()) fail(ps.src, p);
      s.length_m = ps.length;
    }
    auto movedByDynamic = [&](int frame) {
      if (frame < 0) return false;
      for (int v : m.frame_variable_chain[frame])
        if (v < nd) return true;
      return false;
    };
    if (!movedByDynamic(s.puppet_frame) && !movedByDynamic(s.rig_frame))
      fail(ps.src, "string '" + ps.name +
                       "' joins two points that no dynamic variable moves; it cannot act on the "
                       "puppet");
    m.strings.push_back(s);
  }
}

// Every dynamic variable drives a frame that carries mass; every kinematic variable drives a
// frame or a string length.  Then the stops and each dynamic variable's frame and ancestors.
void ModelBuilder::Impl::deriveVariableStructure(Model& m, const std::vector<int>& variable_frame,
                                                 std::vector<char>& kinematic_used) const {
  const int nd = m.nd();
  if (nd == 0)
    fail({"dynamic", 0},
         "a model needs at least one dynamic variable (a puppet joint for the dynamics to move)");
  for (int i = 0; i < nd; ++i) {
    if (variable_frame[i] < 0)
      fail(m.dynamic[i].source, "dynamic variable '" + m.dynamic[i].name + "' drives no frame");
    if (!m.frame_has_mass_below[variable_frame[i]])
      fail(m.dynamic[i].source, "dynamic variable '" + m.dynamic[i].name +
                                    "' moves no mass (its mass matrix row would be zero)");
  }
  for (int i = 0; i < m.nk(); ++i) {
    if (variable_frame[nd + i] >= 0) kinematic_used[i] = 1;
    if (!kinematic_used[i])
      fail(m.kinematic[i].source,
           "kinematic variable '" + m.kinematic[i].name + "' drives no frame and no string length");
  }
  for (int i = 0; i < nd; ++i) {
    const JointLimit& L = m.dynamic[i].limit;
    if (!L.isStop()) continue;
    if (std::isfinite(L.upper)) m.stops.push_back({i, 1.0, L.upper});
    if (std::isfinite(L.lower)) m.stops.push_back({i, -1.0, L.lower});
  }
  m.dynamic_frame.assign(nd, -1);
  m.dynamic_ancestors.assign(nd, {});
  for (int i = 0; i < nd; ++i) {
    m.dynamic_frame[i] = variable_frame[i];
    for (int v : m.frame_variable_chain[variable_frame[i]])
      if (v < nd) m.dynamic_ancestors[i].push_back(v);
  }
}

void ModelBuilder::Impl::buildGeometry(Model& m) const {
  for (const auto& pg : geometry_) {
    Geometry g = pg.g;
    g.frame = frameOf(m, pg.frame, g.source, "geometry");
    if (g.shape.type == ShapeType::Plane)
      fail(g.source, "a plane cannot be a link's geometry (planes are for scenes)");
    const std::string problem = shapeProblem(g.shape);
    if (!problem.empty()) fail(g.source, problem);
    if (!g.pose.matrix().allFinite()) fail(g.source, "pose must be finite");
    if (const std::string p = coordinateProblem(g.pose.translation()); !p.empty())
      fail(g.source, "pose: " + p);
    m.geometry.push_back(g);
  }
  for (const auto& a : allowed_) {
    const int fa = frameOf(m, a.a, a.src, "allowed collision");
    const int fb = frameOf(m, a.b, a.src, "allowed collision");
    m.allowed_collisions.emplace_back(fa, fb);
  }
  auto friction_ok = [&](double mu, const SourceRef& src) {
    if (!(mu >= 0.0 && mu <= kMaxFriction))
      fail(src, "friction must be a number in [0, " + std::to_string(int(kMaxFriction)) + "]");
  };
  m.self_contact.enabled = self_contact_;
  friction_ok(self_friction_, self_contact_src_);
  m.self_contact.friction = self_friction_;
  auto pair = [&](const PendingAllowed& e) {
    const int a = frameOf(m, e.a, e.src, "contact pair"),
              b = frameOf(m, e.b, e.src, "contact pair");
    if (a == b) fail(e.src, "a contact pair is two different frames ('" + e.a + "' twice)");
    return std::make_pair(a, b);
  };
  for (const auto& e : contact_excluded_) m.self_contact.excluded.push_back(pair(e));
  for (const auto& e : contact_friction_) {
    friction_ok(e.friction, e.src);
    const auto [a, b] = pair(e);
    m.self_contact.pair_friction.push_back({a, b, e.friction});
  }
}

}  // namespace marionette
