// SPDX-License-Identifier: BSD-3-Clause
// What the collision model holds (CollisionModel::Impl), shared by collision_model.cpp, which
// builds it once, and collision_checker.cpp, whose per-thread checkers copy its FCL objects.
#pragma once

#include <fcl/broadphase/broadphase_dynamic_AABB_tree.h>
#include <fcl/geometry/bvh/BVH_model.h>
#include <fcl/geometry/shape/box.h>
#include <fcl/geometry/shape/capsule.h>
#include <fcl/geometry/shape/cylinder.h>
#include <fcl/geometry/shape/sphere.h>
#include <fcl/narrowphase/collision.h>
#include <fcl/narrowphase/distance.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "marionette/environments/collision.hpp"

namespace marionette {
namespace detail {

using GeometryPtr = std::shared_ptr<fcl::CollisionGeometryd>;

// A half-space {x : normal . x <= offset} in world coordinates: an obstacle plane's solid side,
// or the outside of one face of the stage bounds (then `bounds_face`: the link must stay in it,
// i.e. on the other side).
struct HalfSpace {
  std::string name;
  Eigen::Vector3d normal;
  double offset_m;
  bool bounds_face;
  bool touchable = false;  // a contact surface, with CollisionOptions::touch_contact_surfaces
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
  bool touchable = false;  // the puppet may touch it, with CollisionOptions::touch_contact_surfaces
};

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

inline fcl::Transform3d toFcl(const Eigen::Isometry3d& T) {
  fcl::Transform3d out = fcl::Transform3d::Identity();
  out.linear() = T.linear();
  out.translation() = T.translation();
  return out;
}

}  // namespace detail

struct CollisionModel::Impl {
  ModelPtr model;
  ScenePtr scene;
  CollisionOptions options;
  Eigen::Isometry3d world_from_stage;
  std::vector<detail::LinkGeometry> links;
  std::vector<detail::ObstacleGeometry> obstacles;  // bounded ones, for the broadphase manager
  // Per obstacle, whether it is touchable; empty when none is (the links' broadphase queries
  // skip these: a touchable one is measured against each link on its own, with the tolerance).
  std::vector<char> obstacle_touchable;
  std::vector<detail::HalfSpace> half_spaces;       // planes and bounds faces
  std::vector<std::pair<int, int>> self_pairs;
  // Per self pair: links that touch as the integrator's contacts (framesTouch), with
  // touch_contact_surfaces: a collision only beyond touch_tolerance_m.
  std::vector<char> self_pair_touchable;
  std::vector<std::pair<int, int>> string_link_pairs;  // (string, link)
  std::shared_ptr<const Contacts> contacts;             // CollisionModel::contacts()
  // FCL objects built once here and copied by each checker: FCL's constructor writes the shared
  // geometry's local AABB, which must not happen while other threads read it.  Obstacles carry
  // their index + 1 as user data, links none.
  std::vector<std::unique_ptr<detail::PosedObject>> link_prototypes;
  std::vector<std::unique_ptr<fcl::CollisionObjectd>> obstacle_prototypes;
};

}  // namespace marionette
