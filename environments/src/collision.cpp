// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/environments/collision.hpp"

#include <fcl/broadphase/broadphase_dynamic_AABB_tree.h>
#include <fcl/geometry/bvh/BVH_model.h>
#include <fcl/geometry/shape/box.h>
#include <fcl/geometry/shape/capsule.h>
#include <fcl/geometry/shape/cylinder.h>
#include <fcl/geometry/shape/sphere.h>
#include <fcl/narrowphase/collision.h>
#include <fcl/narrowphase/distance.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "marionette/models/dynamics.hpp"

namespace marionette {

using GeometryPtr = std::shared_ptr<fcl::CollisionGeometryd>;

const char* contactKindName(ContactKind kind) {
  switch (kind) {
    case ContactKind::None: return "none";
    case ContactKind::LinkObstacle: return "link-obstacle";
    case ContactKind::StringObstacle: return "string-obstacle";
    case ContactKind::LinkLink: return "link-link";
    case ContactKind::StringLink: return "string-link";
    case ContactKind::OutOfBounds: return "out-of-bounds";
  }
  return "?";
}

std::string ContactPair::describe() const {
  switch (kind) {
    case ContactKind::None: return "clear";
    case ContactKind::LinkObstacle: return "link '" + first + "' and obstacle '" + second + "'";
    case ContactKind::StringObstacle: return "string '" + first + "' and obstacle '" + second + "'";
    case ContactKind::LinkLink: return "link '" + first + "' and link '" + second + "'";
    case ContactKind::StringLink: return "string '" + first + "' and link '" + second + "'";
    case ContactKind::OutOfBounds: return "link '" + first + "' outside the stage bounds";
  }
  return "?";
}

// ---- The immutable part ---------------------------------------------------------------------

namespace {

// A half-space {x : normal . x <= offset} in world coordinates: an obstacle plane's solid side,
// or the outside of one face of the stage bounds (then `bounds_face`: the link must stay in it,
// i.e. on the other side).
struct HalfSpace {
  std::string name;
  Eigen::Vector3d normal;
  double offset_m;
  bool bounds_face;
};

struct LinkGeometry {
  int frame;
  std::string name;
  Shape shape;
  Eigen::Isometry3d local;  // in frame coordinates
  GeometryPtr geometry;
  TriangleMeshPtr mesh;  // for the support function of a mesh link
};

struct ObstacleGeometry {
  std::string name;
  GeometryPtr geometry;
  fcl::Transform3d world_pose;
};

GeometryPtr meshGeometry(const TriangleMesh& mesh) {
  auto bvh = std::make_shared<fcl::BVHModel<fcl::OBBRSSd>>();
  std::vector<fcl::Vector3d> vertices(mesh.vertices.begin(), mesh.vertices.end());
  std::vector<fcl::Triangle> triangles;
  triangles.reserve(mesh.triangles.size());
  for (const auto& t : mesh.triangles) triangles.emplace_back(t[0], t[1], t[2]);
  bvh->beginModel(static_cast<int>(triangles.size()), static_cast<int>(vertices.size()));
  bvh->addSubModel(vertices, triangles);
  bvh->endModel();
  bvh->computeLocalAABB();
  return bvh;
}

GeometryPtr primitiveGeometry(const Shape& s) {
  switch (s.type) {
    case ShapeType::Sphere: return std::make_shared<fcl::Sphered>(s.radius_m);
    case ShapeType::Box: return std::make_shared<fcl::Boxd>(s.size_m);
    case ShapeType::Capsule: return std::make_shared<fcl::Capsuled>(s.radius_m, s.length_m);
    case ShapeType::Cylinder: return std::make_shared<fcl::Cylinderd>(s.radius_m, s.length_m);
    case ShapeType::Plane:
    case ShapeType::Mesh: break;
  }
  return nullptr;
}

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

// A CollisionObject whose world AABB we set ourselves.  FCL's computeAABB bounds a rotated
// object by the sphere around its local box: for a 1 m string that is a 1 m cube, which
// overlaps half the furniture and sends every piece to the narrowphase.  The exact box of a
// capsule or a link's support points is as cheap and far tighter.
class PosedObject : public fcl::CollisionObjectd {
 public:
  using fcl::CollisionObjectd::CollisionObjectd;
  void setAABB(const Eigen::Vector3d& lo, const Eigen::Vector3d& hi) {
    aabb.min_ = lo;
    aabb.max_ = hi;
  }
};

fcl::Transform3d toFcl(const Eigen::Isometry3d& T) {
  fcl::Transform3d out = fcl::Transform3d::Identity();
  out.linear() = T.linear();
  out.translation() = T.translation();
  return out;
}

}  // namespace

struct CollisionModel::Impl {
  ModelPtr model;
  ScenePtr scene;
  CollisionOptions options;
  Eigen::Isometry3d world_from_stage;
  std::vector<LinkGeometry> links;
  std::vector<ObstacleGeometry> obstacles;  // bounded ones, for the broadphase manager
  std::vector<HalfSpace> half_spaces;       // planes and bounds faces
  std::vector<std::pair<int, int>> self_pairs;
  std::vector<std::pair<int, int>> string_link_pairs;  // (string, link)
  // FCL objects built once here and copied by each checker: FCL's constructor writes the shared
  // geometry's local AABB, which must not happen while other threads read it.  Obstacles carry
  // their index + 1 as user data, links none.
  std::vector<std::unique_ptr<PosedObject>> link_prototypes;
  std::vector<std::unique_ptr<fcl::CollisionObjectd>> obstacle_prototypes;
};

CollisionModel::CollisionModel(ModelPtr model, ScenePtr scene, CollisionOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.model = std::move(model);
  m.scene = std::move(scene);
  m.options = options;
  const Model& md = *m.model;
  const Eigen::Isometry3d stage_pose = options.stage_pose ? *options.stage_pose : md.stage_pose;
  m.world_from_stage = stage_pose.inverse();

  // Links: names are the frames', unless a frame carries several shapes.
  std::vector<int> shapes_on_frame(md.frames.size() + 1, 0);
  for (const auto& g : md.geometry) ++shapes_on_frame[g.frame + 1];
  for (const auto& g : md.geometry) {
    LinkGeometry link;
    link.frame = g.frame;
    const std::string frame_name = g.frame < 0 ? "world" : md.frames[g.frame].name;
    link.name = shapes_on_frame[g.frame + 1] > 1 ? frame_name + "/" + g.name : frame_name;
    link.shape = g.shape;
    link.local = g.pose;
    if (g.shape.type == ShapeType::Mesh) {
      link.mesh = loadMeshFile(g.shape.mesh_path, g.shape.mesh_scale);
      link.geometry = meshGeometry(*link.mesh);
    } else {
      link.geometry = primitiveGeometry(g.shape);
    }
    m.links.push_back(std::move(link));
  }

  // Obstacles, mapped into the model's world frame.  Instances of one mesh share its BVH.
  std::map<const TriangleMesh*, GeometryPtr> mesh_geometry;
  for (const auto& o : m.scene->obstacles) {
    const Eigen::Isometry3d world_pose = m.world_from_stage * o.pose;
    if (o.shape.type == ShapeType::Plane) {
      const Eigen::Vector3d n = world_pose.linear() * o.shape.normal;
      m.half_spaces.push_back(
          {o.name, n, o.shape.offset_m + n.dot(world_pose.translation()), false});
      continue;
    }
    GeometryPtr g;
    if (o.shape.type == ShapeType::Mesh) {
      GeometryPtr& shared = mesh_geometry[o.mesh.get()];
      if (!shared) shared = meshGeometry(*o.mesh);
      g = shared;
    } else {
      g = primitiveGeometry(o.shape);
    }
    m.obstacles.push_back({o.name, g, toFcl(world_pose)});
  }
  if (m.scene->bounds && options.check_bounds) {
    // Six faces, each kept as its outward normal n and offset d: inside is n . x <= d, and a
    // link is out when its support along n exceeds d.
    const StageBounds& b = *m.scene->bounds;
    const char* names[3] = {"x", "y", "z"};
    for (int axis = 0; axis < 3; ++axis)
      for (int side = 0; side < 2; ++side) {
        Eigen::Vector3d n_stage = Eigen::Vector3d::Zero();
        n_stage[axis] = side == 0 ? -1.0 : 1.0;
        const double d_stage = side == 0 ? -b.min_m[axis] : b.max_m[axis];
        const Eigen::Vector3d n = m.world_from_stage.linear() * n_stage;
        m.half_spaces.push_back({std::string(side == 0 ? "min " : "max ") + names[axis], n,
                                 d_stage + n.dot(m.world_from_stage.translation()), true});
      }
  }

  // Self-collision pairs: links on different frames, neither frame the nearest link-carrying
  // ancestor of the other, and not allowed by the model.
  std::vector<char> carries(md.frames.size(), 0);
  for (const auto& l : m.links)
    if (l.frame >= 0) carries[l.frame] = 1;
  auto link_parent = [&](int frame) {
    for (int f = frame < 0 ? -1 : md.frames[frame].parent; f >= 0; f = md.frames[f].parent)
      if (carries[f]) return f;
    return -1;
  };
  auto allowed = [&](int a, int b) {
    for (const auto& p : md.allowed_collisions)
      if ((p.first == a && p.second == b) || (p.first == b && p.second == a)) return true;
    return false;
  };
  if (options.check_self)
    for (int i = 0; i < static_cast<int>(m.links.size()); ++i)
      for (int j = i + 1; j < static_cast<int>(m.links.size()); ++j) {
        const int fa = m.links[i].frame, fb = m.links[j].frame;
        if (fa == fb || fa < 0 || fb < 0) continue;
        if (link_parent(fa) == fb || link_parent(fb) == fa || allowed(fa, fb)) continue;
        m.self_pairs.emplace_back(i, j);
      }
  if (options.check_strings_vs_links)
    for (int s = 0; s < md.nstrings(); ++s)
      for (int l = 0; l < static_cast<int>(m.links.size()); ++l)
        if (m.links[l].frame != md.strings[s].puppet_frame &&
            m.links[l].frame != md.strings[s].rig_frame)
          m.string_link_pairs.emplace_back(s, l);

  for (const auto& l : m.links) {
    m.link_prototypes.push_back(std::make_unique<PosedObject>(l.geometry));
    m.link_prototypes.back()->setUserData(nullptr);
  }
  for (size_t i = 0; i < m.obstacles.size(); ++i) {
    m.obstacle_prototypes.push_back(std::make_unique<fcl::CollisionObjectd>(
        m.obstacles[i].geometry, m.obstacles[i].world_pose));
    m.obstacle_prototypes.back()->setUserData(
        reinterpret_cast<void*>(static_cast<intptr_t>(i + 1)));
    m.obstacle_prototypes.back()->computeAABB();
  }
}

CollisionModel::~CollisionModel() = default;
const Model& CollisionModel::model() const {
  return *impl_->model;
}
ModelPtr CollisionModel::modelPtr() const {
  return impl_->model;
}
const Scene& CollisionModel::scene() const {
  return *impl_->scene;
}
const CollisionOptions& CollisionModel::options() const {
  return impl_->options;
}
int CollisionModel::linkCount() const {
  return static_cast<int>(impl_->links.size());
}
std::string CollisionModel::linkName(int link) const {
  return impl_->links.at(link).name;
}
int CollisionModel::linkFrame(int link) const {
  return impl_->links.at(link).frame;
}
TriangleMeshPtr CollisionModel::linkMesh(int link) const {
  return impl_->links.at(link).mesh;
}
const std::vector<std::pair<int, int>>& CollisionModel::selfPairs() const {
  return impl_->self_pairs;
}

// ---- The per-thread part --------------------------------------------------------------------

namespace {

// Obstacles carry their index + 1 as FCL user data; the puppet's objects carry none.
int obstacleTag(const fcl::CollisionObjectd* o) {
  return static_cast<int>(reinterpret_cast<intptr_t>(o->getUserData())) - 1;
}

struct CollideQuery {
  fcl::CollisionRequestd request;
  fcl::CollisionResultd result;
  int obstacle = -1;
};

bool collideCallback(fcl::CollisionObjectd* o1, fcl::CollisionObjectd* o2, void* data) {
  auto* q = static_cast<CollideQuery*>(data);
  if (q->obstacle >= 0) return true;
  q->result.clear();
  fcl::collide(o1, o2, q->request, q->result);
  if (q->result.isCollision()) q->obstacle = std::max(obstacleTag(o1), obstacleTag(o2));
  return q->obstacle >= 0;
}

struct DistanceQuery {
  fcl::DistanceRequestd request{true};  // with nearest points
  fcl::DistanceResultd result;
  double min_m = std::numeric_limits<double>::infinity();
  int obstacle = -1;
  Eigen::Vector3d point_query = Eigen::Vector3d::Zero(), point_obstacle = Eigen::Vector3d::Zero();
};

// One narrowphase distance, when it is below `bound` (else `bound` is returned and the nearest
// points are not set).  The bound goes in as FCL's running minimum, so a mesh's BVH traversal
// prunes every node farther than it.  Penetration (FCL reports a negative value) counts as 0.
double pairDistance(const fcl::CollisionObjectd* a, const fcl::CollisionObjectd* b,
                    const fcl::DistanceRequestd& request, fcl::DistanceResultd& result,
                    double bound) {
  result.clear();
  result.min_distance = bound;
  fcl::distance(a, b, request, result);
  return std::max(result.min_distance, 0.0);
}

bool distanceCallback(fcl::CollisionObjectd* o1, fcl::CollisionObjectd* o2, void* data,
                      double& dist) {
  auto* q = static_cast<DistanceQuery*>(data);
  const double d = pairDistance(o1, o2, q->request, q->result, q->min_m);
  if (d < q->min_m) {
    q->min_m = d;
    const bool first_is_obstacle = obstacleTag(o1) >= 0;
    q->obstacle = first_is_obstacle ? obstacleTag(o1) : obstacleTag(o2);
    q->point_obstacle = q->result.nearest_points[first_is_obstacle ? 0 : 1];
    q->point_query = q->result.nearest_points[first_is_obstacle ? 1 : 0];
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
    for (int i = 0; i < nl; ++i)
      if (s.halfSpaceDistance(i, h, p1, p2) <= 0.0)
        return h.bounds_face ? hit(ContactKind::OutOfBounds, m.links[i].name, "stage bounds")
                             : hit(ContactKind::LinkObstacle, m.links[i].name, h.name);
    if (!h.bounds_face && m.options.check_strings)
      for (int j = 0; j < ns; ++j)
        if (s.stringPlaneDistance(j, h, p1, p2) <= 0.0)
          return hit(ContactKind::StringObstacle, s.stringName(j), h.name);
  }
  auto against_scene = [&](fcl::CollisionObjectd* object) {
    s.collide.obstacle = -1;
    s.manager.collide(object, &s.collide, collideCallback);
    return s.collide.obstacle;
  };
  for (int i = 0; i < nl; ++i)
    if (const int o = against_scene(s.links[i].get()); o >= 0)
      return hit(ContactKind::LinkObstacle, m.links[i].name, m.obstacles[o].name);
  if (m.options.check_strings)
    for (int j = 0; j < ns; ++j)
      if (const int o = against_scene(s.strings[j].get()); o >= 0)
        return hit(ContactKind::StringObstacle, s.stringName(j), m.obstacles[o].name);
  auto touching = [&](const fcl::CollisionObjectd* a, const fcl::CollisionObjectd* b) {
    if (!a->getAABB().overlap(b->getAABB())) return false;
    s.collide.result.clear();
    fcl::collide(a, b, s.collide.request, s.collide.result);
    return s.collide.result.isCollision();
  };
  for (const auto& [a, b] : m.self_pairs)
    if (touching(s.links[a].get(), s.links[b].get()))
      return hit(ContactKind::LinkLink, m.links[a].name, m.links[b].name);
  for (const auto& [j, l] : m.string_link_pairs)
    if (touching(s.strings[j].get(), s.links[l].get()))
      return hit(ContactKind::StringLink, s.stringName(j), m.links[l].name);
  return out;
}

ClearanceResult CollisionChecker::clearance(const Eigen::VectorXd& q) {
  Scratch& s = *scratch_;
  const auto& m = s.m;
  s.pose(q);
  ClearanceResult best;
  const Eigen::Vector3d p0 = Eigen::Vector3d::Zero();
  auto consider = [&](double d, ContactKind kind, const std::string& first,
                      const std::string& second, const Eigen::Vector3d& p1,
                      const Eigen::Vector3d& p2, int first_index, int second_index) {
    if (d >= best.distance_m) return;
    best.distance_m = std::max(d, 0.0);
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
  for (const HalfSpace& h : m.half_spaces) {
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
  auto against_scene = [&](fcl::CollisionObjectd* object, ContactKind kind,
                           const std::string& name, int index) {
    if (best.distance_m <= 0.0) return;
    DistanceQuery& dq = s.distance;
    dq.min_m = best.distance_m;
    dq.obstacle = -1;
    s.manager.distance(object, &dq, distanceCallback);
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
    if (best.distance_m <= 0.0 || a->getAABB().distance(b->getAABB()) >= best.distance_m) return;
    const double d = pairDistance(a, b, s.distance.request, s.distance.result, best.distance_m);
    consider(d, kind, first, second, s.distance.result.nearest_points[0],
             s.distance.result.nearest_points[1], ia, ib);
  };
  best.stage_distance_m = best.distance_m;
  best.stage_pair = best.pair;
  best.stage_point_first_m = best.point_first_m;
  best.stage_point_second_m = best.point_second_m;
  best.stage_first_index = best.first_index;
  for (const auto& [a, b] : m.self_pairs)
    pair(s.links[a].get(), s.links[b].get(), ContactKind::LinkLink, m.links[a].name,
         m.links[b].name, a, b);
  for (const auto& [j, l] : m.string_link_pairs)
    pair(s.strings[j].get(), s.links[l].get(), ContactKind::StringLink, s.stringName(j),
         m.links[l].name, j, l);
  best.in_collision = best.distance_m <= 0.0;
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
