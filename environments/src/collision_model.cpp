// SPDX-License-Identifier: BSD-3-Clause
// The collision model (collision.hpp): a model and a scene turned into FCL geometry once, shared
// by every thread.
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "collision_model_impl.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene_contacts.hpp"
#include "marionette/models/contact.hpp"

namespace marionette {

using namespace detail;

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

}  // namespace

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
      m.half_spaces.push_back({o.name, n, o.shape.offset_m + n.dot(world_pose.translation()), false,
                               o.contact && m.options.touch_contact_surfaces});
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
    m.obstacles.push_back(
        {o.name, g, toFcl(world_pose), o.contact && options.touch_contact_surfaces});
  }
  for (const auto& o : m.obstacles)
    if (o.touchable) {
      for (const auto& each : m.obstacles) m.obstacle_touchable.push_back(each.touchable);
      break;
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

  // A bounds face on a surface the puppet may touch (the bounds' floor face on the floor: the
  // opposite normal and offset) is that surface: it tolerates touching, and the stage clearance
  // leaves it out with the surface.
  for (detail::HalfSpace& b : m.half_spaces)
    for (const detail::HalfSpace& p : m.half_spaces)
      if (b.bounds_face && !p.bounds_face && p.touchable && (b.normal + p.normal).norm() < 1e-9 &&
          std::abs(b.offset_m + p.offset_m) < 1e-9)
        b.touchable = true;

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
  const SelfContactRule touch_rule(md);
  if (options.check_self)
    for (int i = 0; i < static_cast<int>(m.links.size()); ++i)
      for (int j = i + 1; j < static_cast<int>(m.links.size()); ++j) {
        const int fa = m.links[i].frame, fb = m.links[j].frame;
        if (fa == fb || fa < 0 || fb < 0) continue;
        if (link_parent(fa) == fb || link_parent(fb) == fa || allowed(fa, fb)) continue;
        m.self_pairs.emplace_back(i, j);
        // (Only shapes the integrator's self-contact rows know: contactBodies.)
        auto body = [](const Shape& shape) {
          return shape.type == ShapeType::Sphere || shape.type == ShapeType::Capsule ||
                 shape.type == ShapeType::Box;
        };
        m.self_pair_touchable.push_back(options.touch_contact_surfaces && body(m.links[i].shape) &&
                                        body(m.links[j].shape) && touch_rule.touches(fa, fb));
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
  if (options.touch_contact_surfaces) m.contacts = sceneContacts(md, *m.scene, stage_pose);
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
const std::shared_ptr<const Contacts>& CollisionModel::contacts() const {
  return impl_->contacts;
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

}  // namespace marionette
