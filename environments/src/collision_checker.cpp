// SPDX-License-Identifier: BSD-3-Clause
// The collision checker (collision.hpp): per-thread FCL objects posed at a state, the
// broadphase, collision, clearance and the stage range.
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fcl/narrowphase/detail/primitive_shape_algorithm/capsule_capsule.h>

#include "collision_model_impl.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/models/dynamics.hpp"

namespace marionette {

using namespace detail;

// ---- The per-thread part --------------------------------------------------------------------

namespace {

// The point of a posed link shape farthest along direction n (world); its dot with n is the
// support function h(n).  Exact for every primitive; a mesh's is its farthest vertex.
Eigen::Vector3d supportPoint(const LinkGeometry& link, const Eigen::Isometry3d& world,
                             const Eigen::Vector3d& n) {
  const Eigen::Vector3d c = world.translation();
  const Eigen::Matrix3d& R = world.linear();
  const Shape& s = link.shape;
  auto sgn = [](double x) { return x >= 0.0 ? 1.0 : -1.0; };
  switch (s.type) {
    case ShapeType::Sphere: return c + s.radius_m * n;
    case ShapeType::Box: {
      Eigen::Vector3d p = c;
      for (int i = 0; i < 3; ++i) p += sgn(n.dot(R.col(i))) * 0.5 * s.size_m[i] * R.col(i);
      return p;
    }
    case ShapeType::Capsule: {
      const Eigen::Vector3d a = R.col(2);
      return c + sgn(n.dot(a)) * 0.5 * s.length_m * a + s.radius_m * n;
    }
    case ShapeType::Cylinder: {
      const Eigen::Vector3d a = R.col(2);
      Eigen::Vector3d radial = n - n.dot(a) * a;
      const double rn = radial.norm();
      if (rn > 1e-12) radial /= rn;
      return c + sgn(n.dot(a)) * 0.5 * s.length_m * a + s.radius_m * radial;
    }
    case ShapeType::Mesh: {
      const Eigen::Vector3d n_local = R.transpose() * n;
      const Eigen::Vector3d* best = &link.mesh->vertices.front();
      for (const auto& v : link.mesh->vertices)
        if (v.dot(n_local) > best->dot(n_local)) best = &v;
      return world * *best;
    }
    case ShapeType::Plane: break;
  }
  return c;
}

// Obstacles carry their index + 1 as FCL user data; the puppet's objects carry none.
int obstacleTag(const fcl::CollisionObjectd* o) {
  return static_cast<int>(reinterpret_cast<intptr_t>(o->getUserData())) - 1;
}

// Whether a broadphase pair is with an obstacle `skip` marks (null: none is skipped).
bool skipped(const std::vector<char>* skip, const fcl::CollisionObjectd* o1,
             const fcl::CollisionObjectd* o2) {
  return skip && (*skip)[std::max(obstacleTag(o1), obstacleTag(o2))];
}

struct CollideQuery {
  fcl::CollisionRequestd request;
  fcl::CollisionResultd result;
  int obstacle = -1;
  const std::vector<char>* skip = nullptr;  // per obstacle: not this query's (touchable ones)
};

bool collideCallback(fcl::CollisionObjectd* o1, fcl::CollisionObjectd* o2, void* data) {
  auto* q = static_cast<CollideQuery*>(data);
  if (q->obstacle >= 0) return true;
  if (skipped(q->skip, o1, o2)) return false;
  q->result.clear();
  fcl::collide(o1, o2, q->request, q->result);
  if (q->result.isCollision()) q->obstacle = std::max(obstacleTag(o1), obstacleTag(o2));
  return q->obstacle >= 0;
}

// Pairs whose bounding boxes are farther apart than a running minimum are skipped; while that
// minimum is a penetration (negative), overlapping boxes are still worth a look.
constexpr double kOverlapBound_m = 1e-12;

struct DistanceQuery {
  DistanceQuery() { signed_request.enable_signed_distance = true; }
  fcl::DistanceRequestd request{true};         // with nearest points
  fcl::DistanceRequestd signed_request{true};  // and the penetration depth (EPA) inside
  Penetration penetration = Penetration::AsZero;
  fcl::DistanceResultd result;
  double min_m = std::numeric_limits<double>::infinity();
  int obstacle = -1;
  Eigen::Vector3d point_query = Eigen::Vector3d::Zero(), point_obstacle = Eigen::Vector3d::Zero();
  const std::vector<char>* skip = nullptr;  // per obstacle: not this query's (touchable ones)
};

// FCL 0.7's EPA, which its signed distance runs where shapes overlap, asserts (aborting the
// process) or loops on some configurations (flexible-collision-library/fcl issues 322 and 578:
// capsule-box pairs first, then two capsules of marionette25's).  Two round shapes (spheres and
// capsules) are measured exactly by FCL's capsule-capsule distance, a sphere a capsule of no
// length: the distance of their axes' segments less the radii, signed.  A pair with a box is
// measured apart by GJK and, overlapping, by its collision's contact (the box tests' analytic
// ones, or MPR): minus its depth, the round shape's deepest point by the contact, the box's a
// depth from it along the normal (both half a depth either side of the contact point for two
// boxes).  The rest (a cylinder's pairs) by EPA, exact where MPR's contact is not: measured by
// the contact, arm3d's capsules against the pillars lost a stage-worthy plan.

// A sphere or capsule as a capsule (a sphere: of no length); false for any other shape.
bool asCapsule(const fcl::CollisionObjectd* o, fcl::Capsuled& out) {
  switch (o->getNodeType()) {
    case fcl::GEOM_SPHERE:
      out = fcl::Capsuled(static_cast<const fcl::Sphered&>(*o->collisionGeometry()).radius, 0.0);
      return true;
    case fcl::GEOM_CAPSULE:
      out = static_cast<const fcl::Capsuled&>(*o->collisionGeometry());
      return true;
    default: return false;
  }
}

// The point of a sphere, capsule or cylinder deepest along direction u (unit, world) at the
// part of it nearest `near` (a contact point: a long capsule crossing a box edge is deepest where
// it crosses, not at its far end); false for any other shape.
bool deepestRoundPoint(const fcl::CollisionObjectd* o, const Eigen::Vector3d& u,
                       const Eigen::Vector3d& near, Eigen::Vector3d& out) {
  const Eigen::Matrix3d R = o->getRotation();
  const Eigen::Vector3d centre = o->getTranslation();
  const Eigen::Vector3d axis = R.col(2);  // FCL's capsules and cylinders lie along their z
  auto onAxis = [&](double half_length) {
    return centre + std::clamp(axis.dot(near - centre), -half_length, half_length) * axis;
  };
  switch (o->getNodeType()) {
    case fcl::GEOM_SPHERE:
      out = centre + static_cast<const fcl::Sphered&>(*o->collisionGeometry()).radius * u;
      return true;
    case fcl::GEOM_CAPSULE: {
      const auto& c = static_cast<const fcl::Capsuled&>(*o->collisionGeometry());
      out = onAxis(0.5 * c.lz) + c.radius * u;
      return true;
    }
    case fcl::GEOM_CYLINDER: {
      const auto& c = static_cast<const fcl::Cylinderd&>(*o->collisionGeometry());
      const Eigen::Vector3d radial = u - axis.dot(u) * axis;
      const double r = radial.norm();
      out = onAxis(0.5 * c.lz) +
            (r > 1e-12 ? Eigen::Vector3d((c.radius / r) * radial) : Eigen::Vector3d::Zero());
      return true;
    }
    default: return false;
  }
}

// The signed distance of two round shapes (asCapsule), exact; false for any other pair.
bool roundPairDistance(const fcl::CollisionObjectd* a, const fcl::CollisionObjectd* b,
                       DistanceQuery& q) {
  fcl::Capsuled ca(1.0, 0.0), cb(1.0, 0.0);
  if (!asCapsule(a, ca) || !asCapsule(b, cb)) return false;
  q.result.clear();
  double d = 0.0;
  Eigen::Vector3d pa, pb;
  if (!fcl::detail::capsuleCapsuleDistance(ca, a->getTransform(), cb, b->getTransform(), &d, &pa,
                                           &pb))
    return false;
  q.result.min_distance = d;
  q.result.nearest_points[0] = pa;
  q.result.nearest_points[1] = pb;
  return true;
}

double contactPairDistance(const fcl::CollisionObjectd* a, const fcl::CollisionObjectd* b,
                           DistanceQuery& q) {
  q.result.clear();
  fcl::distance(a, b, q.request, q.result);
  if (q.result.min_distance > 0.0) return q.result.min_distance;
  fcl::CollisionResultd contact;
  fcl::collide(a, b, fcl::CollisionRequestd(1, true), contact);
  if (!contact.isCollision()) return 0.0;
  const fcl::Contactd& c = contact.getContact(0);
  const bool swapped = c.o1 != a->collisionGeometry().get();
  const Eigen::Vector3d n = (swapped ? -c.normal : c.normal).normalized();  // from a into b
  const double depth = c.penetration_depth;
  Eigen::Vector3d p;
  if (deepestRoundPoint(a, n, c.pos, p)) {
    q.result.nearest_points[0] = p;
    q.result.nearest_points[1] = p - depth * n;
  } else if (deepestRoundPoint(b, -n, c.pos, p)) {
    q.result.nearest_points[0] = p + depth * n;
    q.result.nearest_points[1] = p;
  } else {
    q.result.nearest_points[0] = c.pos + 0.5 * depth * n;
    q.result.nearest_points[1] = c.pos - 0.5 * depth * n;
  }
  q.result.min_distance = -depth;
  return q.result.min_distance;
}

// One narrowphase distance, when it is below `bound` (else `bound` or more is returned and the
// nearest points are not to be read).  The bound goes in as FCL's running minimum, so a mesh's
// BVH traversal prunes every node farther than it.  Penetration (FCL reports a negative value)
// counts as 0, unless `q.penetration` is Signed and both are primitives: then minus its depth
// (a box's pairs by contactPairDistance, two round shapes' by roundPairDistance, others' by FCL's
// EPA).  That query starts from no bound: FCL answers nothing more once its running minimum is
// <= 0, and a deeper pair after a shallower one must still be measured.  Where EPA fails (a depth
// of -1 with no points, or a throw), the pair reads 0 as unsigned.
double pairDistance(const fcl::CollisionObjectd* a, const fcl::CollisionObjectd* b,
                    DistanceQuery& q, double bound) {
  const bool depth = q.penetration == Penetration::Signed && a->getObjectType() == fcl::OT_GEOM &&
                     b->getObjectType() == fcl::OT_GEOM;
  if (depth && (a->getNodeType() == fcl::GEOM_BOX || b->getNodeType() == fcl::GEOM_BOX))
    return contactPairDistance(a, b, q);
  if (depth && roundPairDistance(a, b, q)) return q.result.min_distance;
  if (depth) {
    q.result.clear();
    try {
      fcl::distance(a, b, q.signed_request, q.result);
      const double d = q.result.min_distance;
      const bool pointless =
          (q.result.nearest_points[0] - q.result.nearest_points[1]).norm() < 1e-12;
      if (d >= 0.0 || !pointless) return d;
    } catch (const std::exception&) {
    }
  }
  q.result.clear();
  q.result.min_distance = std::max(bound, 0.0);
  fcl::distance(a, b, q.request, q.result);
  return std::max(q.result.min_distance, 0.0);
}

bool distanceCallback(fcl::CollisionObjectd* o1, fcl::CollisionObjectd* o2, void* data,
                      double& dist) {
  auto* q = static_cast<DistanceQuery*>(data);
  const double d = skipped(q->skip, o1, o2) ? q->min_m : pairDistance(o1, o2, *q, q->min_m);
  if (d < q->min_m) {
    q->min_m = d;
    const bool first_is_obstacle = obstacleTag(o1) >= 0;
    q->obstacle = first_is_obstacle ? obstacleTag(o1) : obstacleTag(o2);
    q->point_obstacle = q->result.nearest_points[first_is_obstacle ? 0 : 1];
    q->point_query = q->result.nearest_points[first_is_obstacle ? 1 : 0];
  }
  if (q->penetration == Penetration::Signed) {
    dist = std::max(q->min_m, kOverlapBound_m);
    return false;
  }
  dist = q->min_m;
  return q->min_m <= 0.0;
}

}  // namespace

// The second of an OutOfBounds pair for a link or string beyond the checker's range.
constexpr const char* kStageRangeName = "stage range";

struct CollisionChecker::Scratch {
  Scratch(const CollisionModel::Impl& impl) : m(impl), kinematics(*impl.model) {}

  const CollisionModel::Impl& m;
  DynamicsData kinematics;
  std::vector<Eigen::Isometry3d> link_world;
  std::vector<std::unique_ptr<PosedObject>> links;
  std::vector<std::shared_ptr<fcl::Capsuled>> string_shapes;  // lz changes with each state
  std::vector<std::unique_ptr<PosedObject>> strings;
  std::vector<Eigen::Vector3d> string_a, string_b;  // puppet and rig ends (world)
  std::vector<std::unique_ptr<fcl::CollisionObjectd>> obstacles;
  fcl::DynamicAABBTreeCollisionManagerd manager;
  CollideQuery collide;
  DistanceQuery distance;
  Eigen::VectorXd posed_q;  // the q everything is posed at, when `posed`
  bool posed = false;
  // A link or string end beyond kFlownAway_m of the origin (a puppet that has flown away):
  // its name; FCL is not asked about such a state (far out, its GJK loses precision and asserts).
  std::string flown_away;
  static constexpr double kFlownAway_m = 10.0 * kStageRange_m;
  static bool away(const Eigen::Vector3d& p) { return !(p.cwiseAbs().maxCoeff() <= kFlownAway_m); }

  bool stringsNeeded() const { return m.options.check_strings || !m.string_link_pairs.empty(); }

  // Poses every link and string of the puppet at q (n_q).
  void pose(const Eigen::VectorXd& q) {
    const Model& md = *m.model;
    if (q.size() != md.nq())
      throw std::invalid_argument(
          "collision check: q has " + std::to_string(q.size()) + " entries; model '" + md.name +
          "' has n_q = " + std::to_string(md.nq()) + " (joints, then rig inputs)");
    if (!q.allFinite()) throw std::invalid_argument("collision check: q is not finite");
    // inCollision and clearance at the same q (the CLI's rows, checkTrajectory) pose once.
    if (posed && q == posed_q) return;
    posed = false;
    forwardKinematics(md, kinematics, q);
    flown_away.clear();
    for (size_t i = 0; i < m.links.size(); ++i) {
      const LinkGeometry& l = m.links[i];
      Eigen::Isometry3d frame = Eigen::Isometry3d::Identity();
      if (l.frame >= 0) {
        frame.linear() = kinematics.frame_R[l.frame];
        frame.translation() = kinematics.frame_p[l.frame];
      }
      link_world[i] = frame * l.local;
      if (flown_away.empty() && away(link_world[i].translation())) flown_away = l.name;
      links[i]->setTransform(link_world[i].linear(), link_world[i].translation());
      Eigen::Vector3d lo, hi;
      if (l.shape.type == ShapeType::Mesh) {
        // The mesh's local box, rotated: centre and |R| * half sides.
        const auto& g = *l.geometry;
        const Eigen::Vector3d half = 0.5 * (g.aabb_local.max_ - g.aabb_local.min_);
        const Eigen::Vector3d centre = link_world[i] * g.aabb_local.center();
        const Eigen::Vector3d reach = link_world[i].linear().cwiseAbs() * half;
        lo = centre - reach;
        hi = centre + reach;
      } else {
        for (int k = 0; k < 3; ++k) {
          const Eigen::Vector3d e = Eigen::Vector3d::Unit(k);
          hi[k] = supportPoint(l, link_world[i], e)[k];
          lo[k] = supportPoint(l, link_world[i], -e)[k];
        }
      }
      links[i]->setAABB(lo, hi);
    }
    if (stringsNeeded()) poseStrings();
    posed_q = q;
    posed = true;
  }

  void poseStrings() {
    const Model& md = *m.model;
    for (int j = 0; j < md.nstrings(); ++j) {
      const String& st = md.strings[j];
      const Eigen::Vector3d a = pointPosition(kinematics, st.puppet_frame, st.puppet_point_m);
      const Eigen::Vector3d b = pointPosition(kinematics, st.rig_frame, st.rig_point_m);
      string_a[j] = a;
      string_b[j] = b;
      if (flown_away.empty() && (away(a) || away(b))) flown_away = st.name;
      const Eigen::Vector3d d = b - a;
      const double length = d.norm();
      // FCL's capsule lies along z, centred: turn z onto a -> b and put it at the midpoint.
      string_shapes[j]->lz = std::max(length, 1e-9);
      string_shapes[j]->computeLocalAABB();
      const Eigen::Matrix3d R =
          length > 1e-12 ? Eigen::Quaterniond::FromTwoVectors(Eigen::Vector3d::UnitZ(), d / length)
                               .toRotationMatrix()
                         : Eigen::Matrix3d::Identity();
      strings[j]->setTransform(R, 0.5 * (a + b));
      const Eigen::Vector3d r = Eigen::Vector3d::Constant(m.options.string_radius_m);
      strings[j]->setAABB(a.cwiseMin(b) - r, a.cwiseMax(b) + r);
    }
  }

  // Signed distance from link i to half-space h (its solid side for a plane, its outside for a
  // bounds face), with the nearest points; <= 0 is a contact.
  double halfSpaceDistance(int i, const HalfSpace& h, Eigen::Vector3d& on_link,
                           Eigen::Vector3d& on_plane) const {
    // Plane: the link's lowest point along n must stay above the offset.  Bounds face: the
    // link's farthest point along the outward normal must stay below it.
    on_link = supportPoint(m.links[i], link_world[i], h.bounds_face ? h.normal : -h.normal);
    const double gap =
        h.bounds_face ? h.offset_m - h.normal.dot(on_link) : h.normal.dot(on_link) - h.offset_m;
    on_plane = on_link + (h.bounds_face ? gap : -gap) * h.normal;
    return gap;
  }
  double stringPlaneDistance(int j, const HalfSpace& h, Eigen::Vector3d& on_string,
                             Eigen::Vector3d& on_plane) const {
    const double r = m.options.string_radius_m;
    const Eigen::Vector3d& low =
        h.normal.dot(string_a[j]) <= h.normal.dot(string_b[j]) ? string_a[j] : string_b[j];
    on_string = low - r * h.normal;
    const double gap = h.normal.dot(on_string) - h.offset_m;
    on_plane = on_string - gap * h.normal;
    return gap;
  }

  std::string stringName(int j) const { return m.model->strings[j].name; }
};

CollisionChecker::CollisionChecker(CollisionModelPtr collision_model)
    : model_(std::move(collision_model)), scratch_(std::make_unique<Scratch>(model_->impl())) {
  const auto& m = model_->impl();
  Scratch& s = *scratch_;
  s.link_world.resize(m.links.size());
  for (const auto& prototype : m.link_prototypes)
    s.links.push_back(std::make_unique<PosedObject>(*prototype));
  const int ns = m.model->nstrings();
  s.string_a.resize(ns);
  s.string_b.resize(ns);
  for (int i = 0; i < ns; ++i) {
    // Each checker owns its strings' capsules: their length changes with every state.
    s.string_shapes.push_back(std::make_shared<fcl::Capsuled>(m.options.string_radius_m, 1.0));
    s.strings.push_back(std::make_unique<PosedObject>(s.string_shapes.back()));
    s.strings.back()->setUserData(nullptr);
  }
  std::vector<fcl::CollisionObjectd*> raw;
  for (const auto& prototype : m.obstacle_prototypes) {
    s.obstacles.push_back(std::make_unique<fcl::CollisionObjectd>(*prototype));
    raw.push_back(s.obstacles.back().get());
  }
  s.manager.registerObjects(raw);
  s.manager.setup();
}

CollisionChecker::~CollisionChecker() = default;

CollisionResult CollisionChecker::inCollision(const Eigen::VectorXd& q) {
  Scratch& s = *scratch_;
  const auto& m = s.m;
  s.pose(q);
  CollisionResult out;
  auto hit = [&](ContactKind kind, std::string first, std::string second) {
    out.in_collision = true;
    out.pair = {kind, std::move(first), std::move(second)};
    return out;
  };
  if (!s.flown_away.empty()) return hit(ContactKind::OutOfBounds, s.flown_away, kStageRangeName);
  const int nl = static_cast<int>(m.links.size());
  const int ns = s.stringsNeeded() ? m.model->nstrings() : 0;
  Eigen::Vector3d p1, p2;
  for (const HalfSpace& h : m.half_spaces) {
    // A surface the puppet may touch, and the stage box's faces (its floor face is the floor's
    // plane), tolerate touch_tolerance_m with touch_contact_surfaces.
    const double touch_m = h.touchable || (h.bounds_face && m.options.touch_contact_surfaces)
                               ? m.options.touch_tolerance_m
                               : 0.0;
    for (int i = 0; i < nl; ++i)
      if (s.halfSpaceDistance(i, h, p1, p2) <= -touch_m)
        return h.bounds_face ? hit(ContactKind::OutOfBounds, m.links[i].name, "stage bounds")
                             : hit(ContactKind::LinkObstacle, m.links[i].name, h.name);
    if (!h.bounds_face && m.options.check_strings)
      for (int j = 0; j < ns; ++j)
        if (s.stringPlaneDistance(j, h, p1, p2) <= 0.0)
          return hit(ContactKind::StringObstacle, s.stringName(j), h.name);
  }
  const std::vector<char>* touchable =
      m.obstacle_touchable.empty() ? nullptr : &m.obstacle_touchable;
  auto against_scene = [&](fcl::CollisionObjectd* object, const std::vector<char>* skip) {
    s.collide.obstacle = -1;
    s.collide.skip = skip;
    s.manager.collide(object, &s.collide, collideCallback);
    return s.collide.obstacle;
  };
  for (int i = 0; i < nl; ++i)
    if (const int o = against_scene(s.links[i].get(), touchable); o >= 0)
      return hit(ContactKind::LinkObstacle, m.links[i].name, m.obstacles[o].name);
  if (m.options.check_strings)
    for (int j = 0; j < ns; ++j)
      if (const int o = against_scene(s.strings[j].get(), nullptr); o >= 0)
        return hit(ContactKind::StringObstacle, s.stringName(j), m.obstacles[o].name);
  auto touching = [&](const fcl::CollisionObjectd* a, const fcl::CollisionObjectd* b) {
    if (!a->getAABB().overlap(b->getAABB())) return false;
    s.collide.result.clear();
    fcl::collide(a, b, s.collide.request, s.collide.result);
    return s.collide.result.isCollision();
  };
  // Links that touch one another as contacts (spheres, capsules and boxes: FCL measures their
  // depth): a collision only deeper than the tolerance.
  auto shallow = [&](const fcl::CollisionObjectd* a, const fcl::CollisionObjectd* b) {
    const Penetration reading = s.distance.penetration;
    s.distance.penetration = Penetration::Signed;
    const double d = pairDistance(a, b, s.distance, 0.0);
    s.distance.penetration = reading;
    return d > -m.options.touch_tolerance_m;
  };
  // Obstacles the puppet may touch (spheres, capsules, boxes: the integrator's stage bodies):
  // a collision only deeper than the tolerance.
  for (std::size_t o = 0; touchable && o < m.obstacles.size(); ++o)
    for (int i = 0; (*touchable)[o] && i < nl; ++i)
      if (touching(s.links[i].get(), s.obstacles[o].get()) &&
          !shallow(s.links[i].get(), s.obstacles[o].get()))
        return hit(ContactKind::LinkObstacle, m.links[i].name, m.obstacles[o].name);
  for (std::size_t k = 0; k < m.self_pairs.size(); ++k) {
    const auto [a, b] = m.self_pairs[k];
    if (touching(s.links[a].get(), s.links[b].get()) &&
        !(m.self_pair_touchable[k] && shallow(s.links[a].get(), s.links[b].get())))
      return hit(ContactKind::LinkLink, m.links[a].name, m.links[b].name);
  }
  for (const auto& [j, l] : m.string_link_pairs)
    if (touching(s.strings[j].get(), s.links[l].get()))
      return hit(ContactKind::StringLink, s.stringName(j), m.links[l].name);
  return out;
}

ClearanceResult CollisionChecker::clearance(const Eigen::VectorXd& q, Penetration penetration) {
  Scratch& s = *scratch_;
  const auto& m = s.m;
  s.pose(q);
  ClearanceResult best;
  const bool depth = penetration == Penetration::Signed;
  s.distance.penetration = penetration;
  // Whether a pair `apart` (its boxes' distance) can still come nearer than the best so far.
  const auto worth = [&](double apart) {
    return apart < (depth ? std::max(best.distance_m, kOverlapBound_m) : best.distance_m);
  };
  const Eigen::Vector3d p0 = Eigen::Vector3d::Zero();
  auto consider = [&](double d, ContactKind kind, const std::string& first,
                      const std::string& second, const Eigen::Vector3d& p1,
                      const Eigen::Vector3d& p2, int first_index, int second_index) {
    if (d >= best.distance_m) return;
    best.distance_m = depth ? d : std::max(d, 0.0);
    best.pair = {kind, first, second};
    best.point_first_m = p1;
    best.point_second_m = p2;
    best.first_index = first_index;
    best.second_index = second_index;
  };
  if (!s.flown_away.empty()) {
    consider(0.0, ContactKind::OutOfBounds, s.flown_away, kStageRangeName, p0, p0, -1, -1);
    best.stage_distance_m = 0.0;
    best.stage_pair = best.pair;
    best.in_collision = true;
    return best;
  }
  const int nl = static_cast<int>(m.links.size());
  const int ns = s.stringsNeeded() ? m.model->nstrings() : 0;
  Eigen::Vector3d p1, p2;
  // Surfaces the puppet may touch: in the clearance to anything (after the stage's is taken); in
  // collision only beyond the tolerance (inCollision's verdict, below).
  auto touchable = [&]() {
    for (const HalfSpace& h : m.half_spaces) {
      if (!h.touchable || h.bounds_face) continue;  // (a bounds face on one: the same distances)
      for (int i = 0; i < nl; ++i) {
        const double d = s.halfSpaceDistance(i, h, p1, p2);
        consider(d, ContactKind::LinkObstacle, m.links[i].name, h.name, p1, p2, i, -1);
      }
    }
  };
  for (const HalfSpace& h : m.half_spaces) {
    if (h.touchable) {
      if (!h.bounds_face && m.options.check_strings)
        for (int j = 0; j < ns; ++j) {
          const double d = s.stringPlaneDistance(j, h, p1, p2);
          consider(d, ContactKind::StringObstacle, s.stringName(j), h.name, p1, p2, j, -1);
        }
      continue;
    }
    for (int i = 0; i < nl; ++i) {
      const double d = s.halfSpaceDistance(i, h, p1, p2);
      if (h.bounds_face)
        consider(d, ContactKind::OutOfBounds, m.links[i].name, "stage bounds", p1, p2, i, -1);
      else
        consider(d, ContactKind::LinkObstacle, m.links[i].name, h.name, p1, p2, i, -1);
    }
    if (!h.bounds_face && m.options.check_strings)
      for (int j = 0; j < ns; ++j) {
        const double d = s.stringPlaneDistance(j, h, p1, p2);
        consider(d, ContactKind::StringObstacle, s.stringName(j), h.name, p1, p2, j, -1);
      }
  }
  auto against_scene = [&](fcl::CollisionObjectd* object, ContactKind kind, const std::string& name,
                           int index) {
    if (!worth(0.0)) return;
    DistanceQuery& dq = s.distance;
    dq.min_m = best.distance_m;
    dq.obstacle = -1;
    // (Links: not the touchable obstacles, which are in the clearance to anything only.)
    dq.skip = kind == ContactKind::LinkObstacle && !m.obstacle_touchable.empty()
                  ? &m.obstacle_touchable
                  : nullptr;
    s.manager.distance(object, &dq, distanceCallback);
    dq.skip = nullptr;
    if (dq.obstacle >= 0)
      consider(dq.min_m, kind, name, m.obstacles[dq.obstacle].name, dq.point_query,
               dq.point_obstacle, index, -1);
  };
  for (int i = 0; i < nl; ++i)
    against_scene(s.links[i].get(), ContactKind::LinkObstacle, m.links[i].name, i);
  if (m.options.check_strings)
    for (int j = 0; j < ns; ++j)
      against_scene(s.strings[j].get(), ContactKind::StringObstacle, s.stringName(j), j);
  auto pair = [&](const fcl::CollisionObjectd* a, const fcl::CollisionObjectd* b, ContactKind kind,
                  const std::string& first, const std::string& second, int ia, int ib) {
    if (!worth(a->getAABB().distance(b->getAABB()))) return;
    const double d = pairDistance(a, b, s.distance, best.distance_m);
    consider(d, kind, first, second, s.distance.result.nearest_points[0],
             s.distance.result.nearest_points[1], ia, ib);
  };
  best.stage_distance_m = best.distance_m;
  best.stage_pair = best.pair;
  best.stage_point_first_m = best.point_first_m;
  best.stage_point_second_m = best.point_second_m;
  best.stage_first_index = best.first_index;
  // The pairs the puppet may not touch, then the self-contacts.
  auto self_pairs = [&](bool touchable_pairs) {
    for (std::size_t k = 0; k < m.self_pairs.size(); ++k) {
      if ((m.self_pair_touchable[k] != 0) != touchable_pairs) continue;
      const auto [a, b] = m.self_pairs[k];
      pair(s.links[a].get(), s.links[b].get(), ContactKind::LinkLink, m.links[a].name,
           m.links[b].name, a, b);
    }
  };
  self_pairs(false);
  for (const auto& [j, l] : m.string_link_pairs)
    pair(s.strings[j].get(), s.links[l].get(), ContactKind::StringLink, s.stringName(j),
         m.links[l].name, j, l);
  best.forbidden_distance_m = best.distance_m;
  best.forbidden_pair = best.pair;
  best.forbidden_point_first_m = best.point_first_m;
  best.forbidden_point_second_m = best.point_second_m;
  best.forbidden_first_index = best.first_index;
  best.forbidden_second_index = best.second_index;
  self_pairs(true);
  if (!m.options.touch_contact_surfaces) {
    best.in_collision = best.distance_m <= 0.0;
    return best;
  }
  touchable();
  for (std::size_t o = 0; o < m.obstacle_touchable.size(); ++o)
    for (int i = 0; m.obstacle_touchable[o] && i < nl; ++i)
      pair(s.links[i].get(), s.obstacles[o].get(), ContactKind::LinkObstacle, m.links[i].name,
           m.obstacles[o].name, i, -1);
  best.in_collision = inCollision(q).in_collision;
  return best;
}

StateCheck CollisionChecker::checkState(const Eigen::VectorXd& q) {
  CollisionResult hit = inCollision(q);
  const ClearanceResult near = clearance(q);
  StateCheck out;
  out.in_collision = hit.in_collision;
  out.pair = hit.in_collision ? std::move(hit.pair) : near.pair;
  out.clearance_m = hit.in_collision ? 0.0 : near.distance_m;
  out.stage_clearance_m = near.stage_distance_m;
  out.stage_pair = near.stage_pair;
  return out;
}

TrajectoryCheck CollisionChecker::checkTrajectory(const Eigen::MatrixXd& q_columns,
                                                  bool with_clearance,
                                                  bool stop_at_first_collision) {
  TrajectoryCheck out;
  out.samples.resize(q_columns.cols());
  for (Eigen::Index k = 0; k < q_columns.cols(); ++k) {
    const Eigen::VectorXd q = q_columns.col(k);
    TrajectorySample& sample = out.samples[k];
    ContactPair pair;
    if (with_clearance) {
      StateCheck c = checkState(q);
      sample.in_collision = c.in_collision;
      sample.clearance_m = c.clearance_m;
      sample.stage_clearance_m = c.stage_clearance_m;
      pair = std::move(c.pair);
      if (out.min_clearance_index < 0 || sample.clearance_m < out.min_clearance_m) {
        out.min_clearance_m = sample.clearance_m;
        out.min_clearance_index = static_cast<int>(k);
      }
    } else {
      CollisionResult c = inCollision(q);
      sample.in_collision = c.in_collision;
      pair = std::move(c.pair);
    }
    if (sample.in_collision && out.first_collision < 0) {
      out.first_collision = static_cast<int>(k);
      out.first_pair = pair;
      if (stop_at_first_collision) break;
    }
  }
  return out;
}

}  // namespace marionette
