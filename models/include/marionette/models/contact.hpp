// SPDX-License-Identifier: BSD-3-Clause
// The puppet touching the stage's surfaces (the floor) as unilateral constraints of the
// integrator's step, exactly like its strings and joint stops: a contact row's gap, its normal
// force (lambda >= 0) and their complementarity in the same Newton solve, inelastic (a point that
// lands stays on the surface: no bounce).  Time-stepping contact in the variational integrator's
// form (Stewart & Trinkle, "An implicit time-stepping scheme for rigid body dynamics with
// inelastic collisions and Coulomb friction", IJNME 1996; Manchester & Kuindersma, "Variational
// Contact-Implicit Trajectory Optimization", ISRR 2017): the impulse acts along the gap's gradient
// at q_k, the gap is closed at q_{k+1} (docs/design.md, contacts).  Coulomb friction by a
// polygonal cone with maximal dissipation, solved in the same Newton iteration: a touching
// contact sticks (its point does not move along the surface over the step) or slides with the
// friction force on the cone's boundary, against the motion.
//
// Contents
//   ContactPoint    a sphere fixed in a puppet frame (a sphere link, a capsule's end)
//   ContactSurface  a plane the puppet may rest on, in the model's world (rig) frame, and its
//                   friction coefficient
//   tangentBasis    the surface's two tangent directions, in which friction is written
//   coreTangents    a body's, in its core frame
//   ContactBody     a convex core that contact points touch: a link's, or an obstacle's fixed
//                   on the stage (kStageFrame)
//   poseCore        a body's core frame in the world
//   contactBody     a shape's body (spheres, capsules, boxes)
//   coreGap         a sphere's gap against a body and the normal out of its core
//   segmentCoreGap  a capsule's (its core segment's) against a body: the least over its spheres
//   SelfContact     a contact point touching a body: another link's (self-contact) or the
//                   stage's (a scene box, sphere or capsule the puppet may touch); or a capsule's
//                   middle touching one (a segment row)
//   Contacts        the points, surfaces, bodies: one contact row per (surface, point) and per
//                   point-body pair
//   contactPoints   a model's link geometry as contact points
//   contactBodies   a model's link geometry as bodies
//   selfContacts    the pairs of a model's contacts: section (SelfContactSpec)
//   floorSurface    the stage's floor in a model's world frame
//   contactsProblem what is wrong with contacts given to the integrator
//
// A surface row's gap is the depth by which its sphere enters the surface's solid side,
//   g(q) = offset + radius - normal . p(q) <= 0,
// p the sphere's centre: smooth in q (the centre, not the moving witness point on the sphere).
// A body row's gap is the depth by which the point's sphere enters the body,
//   g(q) = radius + body radius - |x - clamp(x)|,  x the sphere's centre in the body's core
// frame, clamp(x) the core's point nearest to it (inside the core: radius + body radius plus the
// depth below the nearest face).  Its gradient is exact, -n^T (J_point - J_body) with n the
// normal out of the body and J_body the Jacobian of the body's material point at the centre;
// continuously differentiable outside the core.
// A segment row covers a capsule's middle, which its end rows do not (a forearm across the edge
// of the pelvis): the same gap at the point x(t) of the capsule's core segment that enters the
// body deepest, t in [0, 1].  Its gradient is the same expression at that point (the envelope
// theorem: the point's own motion along the segment does not change the gap to first order),
// exact wherever the point is unique; the step takes the row only where that point is inside
// the segment and the middle enters deeper than both ends (SelfContact::segment).
#pragma once

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct ContactPoint {
  std::string link;         // the geometry's name, for reports
  int frame = -1;           // a frame a dynamic variable moves
  Eigen::Vector3d local_m;  // the sphere's centre in frame coordinates
  double radius_m = 0.0;    // the largest of the ends that share it (what touches a surface)
  std::string name;  // unique among a model's points: a sphere's geometry name, a capsule's two
                     // ends NAME+z and NAME-z (along its local z axis); "" = link
  // Other frames whose geometry has this point wherever the puppet is (an elbow: the upper arm's
  // end is the forearm's): a self-contact of any of them is this point's.
  std::vector<int> shared_with;
  // Where the ends that share it differ in size: each frame's own end's radius (the elbow's is
  // the upper arm's 15 mm on the upper arm, the forearm's 10 mm on the forearm).
  std::vector<std::pair<int, double>> radius_on_frame_m;
  // The radius of the end that `frame` (the point's or one it is shared with) has here.
  double radiusOn(int frame) const;
};

// Coulomb friction coefficient of a surface unless its description says otherwise: a puppet's
// felt or wooden foot on a stage's boards (wood on wood is 0.25 to 0.5).
constexpr double kDefaultFriction = 0.5;

// The half-space {x : normal . x <= offset_m} is solid (shape.hpp's plane), normal a unit vector.
// friction is Coulomb's mu: the tangential force stays within mu times the normal force; 0 is a
// frictionless surface.
struct ContactSurface {
  std::string name;
  Eigen::Vector3d normal = Eigen::Vector3d::UnitZ();
  double offset_m = 0.0;
  double friction = kDefaultFriction;
};

// Two unit tangents (columns) completing `normal` to a right-handed orthonormal basis (t1, t2, n):
// t1 `axis` projected onto the plane (`fallback` where `axis` is nearly normal: |n . axis| >=
// 0.9); by default the world x axis (y).
Eigen::Matrix<double, 3, 2> tangentBasis(
    const Eigen::Vector3d& normal, const Eigen::Vector3d& axis = Eigen::Vector3d::UnitX(),
    const Eigen::Vector3d& fallback = Eigen::Vector3d::UnitY());

// Coulomb's cone as a polygon of this many facets, circumscribing the circle of radius
// mu lambda_n, facet i's normal at the angle 2 pi i / kFrictionFacets from the first tangent: a
// pull along a facet's normal slips at exactly mu N, one along a vertex at mu N / cos(pi / 16),
// 2 % more.  The integrator's step and the transcription's cone.
constexpr int kFrictionFacets = 16;

// A body row's tangents in its body's core frame: the first along the core's z axis (a
// capsule's axis, so the same all around it: no switch of basis as a point slides around a
// capsule) unless the normal is nearly along it (a capsule's cap, a box's z face).
inline Eigen::Matrix<double, 3, 2> coreTangents(const Eigen::Vector3d& normal) {
  return tangentBasis(normal, Eigen::Vector3d::UnitZ(), Eigen::Vector3d::UnitX());
}

// ContactBody::frame of a body fixed on the stage (a scene obstacle): its pose is in the model's
// world (rig) frame, and it does not move.
constexpr int kStageFrame = -1;

// The points within radius_m of the box |x_i| <= half_m_i (core coordinates: `pose` in the
// frame's): a sphere (half 0), a capsule (its segment, half (0, 0, length / 2)), a box (radius 0).
struct ContactBody {
  std::string name;         // the geometry's, or the obstacle's
  int frame = kStageFrame;  // a frame the puppet's joints alone move, or kStageFrame
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();
  Eigen::Vector3d half_m = Eigen::Vector3d::Zero();
  double radius_m = 0.0;
};

// The body's core frame in the world (rotation, origin) with its frame at (R_frame, p_frame):
// a body on kStageFrame has its own pose (the frame's is not read).
inline void poseCore(const ContactBody& body, const Eigen::Matrix3d& R_frame,
                     const Eigen::Vector3d& p_frame, Eigen::Matrix3d& R, Eigen::Vector3d& origin) {
  if (body.frame == kStageFrame) {
    R = body.pose.linear();
    origin = body.pose.translation();
    return;
  }
  R.noalias() = R_frame * body.pose.linear();
  origin.noalias() = R_frame * body.pose.translation() + p_frame;
}

// `shape` at `pose` on `frame` as a body: spheres, capsules and boxes; false for other shapes
// (cylinders, meshes and planes are not bodies).
bool contactBody(const std::string& name, int frame, const Eigen::Isometry3d& pose,
                 const Shape& shape, ContactBody& body);

// A sphere of radius_m centred at x_core (the body's core coordinates) against `body`: the
// self-contact row's gap (above) and the unit normal out of the core at the sphere's centre
// (inside the core: out through its nearest face).  Inline: the step evaluates it per row and
// Newton iteration.
struct CoreGap {
  double gap_m = 0.0;
  Eigen::Vector3d normal_core = Eigen::Vector3d::UnitZ();
};
inline CoreGap coreGap(const ContactBody& body, const Eigen::Vector3d& x_core, double radius_m) {
  CoreGap out;
  const Eigen::Vector3d nearest = x_core.cwiseMax(-body.half_m).cwiseMin(body.half_m);
  const double distance = (x_core - nearest).norm();
  const double radii = radius_m + body.radius_m;
  if (distance > 0.0) {
    out.normal_core = (x_core - nearest) / distance;
    out.gap_m = radii - distance;
  } else {
    int axis = 0;
    const double depth = (body.half_m - x_core.cwiseAbs()).minCoeff(&axis);
    out.normal_core = Eigen::Vector3d::Unit(axis) * (x_core[axis] < 0.0 ? -1.0 : 1.0);
    out.gap_m = radii + depth;
  }
  return out;
}

// The segment from a_core to b_core in `body`'s core coordinates, the core of a capsule of radius
// radius_m, against `body`: the greatest of coreGap over the segment's points x(t) = a + t (b -
// a), t in [0, 1], its normal and the point (the first of them where several tie: a segment
// parallel to a face).  Exact to round-off: outside the core, the squared distance is a convex
// quadratic between the (at most six) points where the segment crosses a face's plane, each
// piece minimised in closed form; inside it, the depth is the least of six linear functions of t,
// maximised at an end or where two of them meet.
struct SegmentGap {
  double gap_m = 0.0;
  Eigen::Vector3d normal_core = Eigen::Vector3d::UnitZ();
  double t = 0.0;
  Eigen::Vector3d x_core = Eigen::Vector3d::Zero();
};
SegmentGap segmentCoreGap(const ContactBody& body, const Eigen::Vector3d& a_core,
                          const Eigen::Vector3d& b_core, double radius_m);
// A capsule's core segment's ends (its core's -z, then +z end) in a body's core coordinates,
// from the two cores' poses in the world (poseCore): segmentCoreGap's a_core and b_core.
inline std::pair<Eigen::Vector3d, Eigen::Vector3d> segmentEnds(const ContactBody& capsule,
                                                               const Eigen::Matrix3d& R_capsule,
                                                               const Eigen::Vector3d& o_capsule,
                                                               const Eigen::Matrix3d& R_body,
                                                               const Eigen::Vector3d& o_body) {
  const Eigen::Vector3d centre = R_body.transpose() * (o_capsule - o_body);
  const Eigen::Vector3d axis = R_body.transpose() * R_capsule.col(2);
  const double half_m = capsule.half_m.z();
  return {centre - half_m * axis, centre + half_m * axis};
}

// Where a segment row takes part: its deepest point inside the segment, entering deeper than
// either end by more than this.  Otherwise its end rows stand for it (to this much: a capsule's
// middle less than this deeper than its end is left to the end's row), and two rows of one
// constraint never touch at once (a capsule lying along a face has its ends' rows alone).
constexpr double kSegmentMargin_m = 1e-4;
// The gap of a segment row where its deepest point is inside the segment and enters deeper than
// either end by more than margin_m, else -infinity: its ends' rows stand for it.
double segmentRowGap(const ContactBody& body, const SegmentGap& middle,
                     const Eigen::Vector3d& a_core, const Eigen::Vector3d& b_core, double radius_m,
                     double margin_m = kSegmentMargin_m);

// Contact point `point` (Contacts::points) touching body `body` (Contacts::bodies), with
// Coulomb's mu: a self-contact, or, on a body on kStageFrame, the puppet touching an obstacle.
// With `segment` a capsule's body (Contacts::bodies), the capsule's core segment touching `body`
// instead (point -1; radius_m the capsule's): a segment row.
struct SelfContact {
  int point = -1;
  int body = -1;
  double friction = kDefaultSelfFriction;
  // The point's sphere as the frame that may touch the body has it (ContactPoint::radiusOn): a
  // shared elbow against the chest, which only the forearm may touch, is the forearm's end.
  double radius_m = 0.0;
  int segment = -1;
};

struct Contacts {
  std::vector<ContactPoint> points;
  std::vector<ContactSurface> surfaces;
  std::vector<ContactBody> bodies;
  std::vector<SelfContact> self;
  // Rows surface-major, row = surface * points.size() + point, then one per entry of `self`
  // (the links' points on links, their capsules' middles, then the same on the stage's bodies).
  int surfaceRows() const { return static_cast<int>(points.size() * surfaces.size()); }
  int rows() const { return surfaceRows() + static_cast<int>(self.size()); }
  // Whether row r is a segment row (SelfContact::segment).
  bool segmentRow(int r) const { return r >= surfaceRows() && self[r - surfaceRows()].segment >= 0; }
  // Row r's name for reports and tables: "SURFACE/POINT" (e.g. "floor/shin_l-z"),
  // "BODY/POINT" for a self-contact (e.g. "chest/forearm_l-z"), "BODY/CAPSULE" for a segment
  // row (e.g. "pelvis/forearm_l").
  std::string rowName(int r) const;
};

// The link geometry of `model` as contact points: a sphere's centre, a capsule's two end
// centres with its radius; points that coincide wherever the puppet is (two capsules' ends at
// the joint between them) once, with the larger radius.  Boxes, cylinders and meshes are not
// contact points yet; geometry on a frame the rig moves is skipped.
std::vector<ContactPoint> contactPoints(const Model& model);

// The link geometry of `model` as bodies: spheres, capsules and boxes on frames the puppet's
// joints alone move (cylinders and meshes are not yet).
std::vector<ContactBody> contactBodies(const Model& model);
// A capsule's body (its core a segment along z), whose middle a segment row covers.
inline bool isCapsule(const ContactBody& body) {
  return body.half_m.x() == 0.0 && body.half_m.y() == 0.0 && body.half_m.z() > 0.0;
}
// A segment row for `capsule` against `body` (indices into bodies), or none: not a capsule of
// the puppet's, a sphere (its own row covers the capsule's middle), the capsule itself, or a
// capsule before it (one row per pair).
bool segmentRowFor(const std::vector<ContactBody>& bodies, int capsule, int body);

// The most self-contact rows addSelfContacts makes (the built-in puppets have 142 and 165): each
// row costs every step, and its gradients n_d doubles.
constexpr int kMaxSelfContacts = 4096;

// Fills contacts.bodies and contacts.self from `model` (contacts.points already set): every point
// against every body on a frame that may touch the point's or one it is shared with
// (model.self_contact: not excluded, not
// adjacent -- neither frame the nearest geometry-carrying ancestor of the other -- and not in
// allowed_collisions), with that pair's friction; then a segment row for each capsule against
// each box and capsule it may touch (one per pair of capsules; a sphere's own row covers a
// capsule's middle).  Nothing when model.self_contact.enabled is false.  More than
// kMaxSelfContacts rows: FieldError "contacts" (exclude pairs, or turn self-contact off).
void addSelfContacts(const Model& model, Contacts& contacts);

// Whether links on frames a and b touch each other as contacts (addSelfContacts' rule), for many
// queries: built once per model.
class SelfContactRule {
 public:
  explicit SelfContactRule(const Model& model);
  bool touches(int frame_a, int frame_b) const;

 private:
  bool enabled_;
  std::vector<int> link_parent_;         // per frame: the nearest ancestor with geometry, or -1
  std::set<std::pair<int, int>> apart_;  // allowed_collisions and excluded, (lower, higher)
};
// The same for one query.
bool framesTouch(const Model& model, int frame_a, int frame_b);

// The stage's floor (z = 0 in stage coordinates, solid below) in the world frame of `model`,
// which hangs at model.stage_pose.
ContactSurface floorSurface(const Model& model);

// "" when `contacts` fits `model`, else what is wrong, naming the field: a point's frame that is
// not one the puppet's joints alone move, a centre or radius not finite (or a radius below 0 or
// beyond the stage's range), a surface's normal not a unit vector, its offset not finite or its
// friction not a finite number >= 0, a body like a point, a self-contact's indices or friction.
// VariationalIntegrator refuses such contacts (std::invalid_argument).
std::string contactsProblem(const Model& model, const Contacts& contacts);

}  // namespace marionette

#pragma GCC visibility pop
