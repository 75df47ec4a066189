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
//   Contacts        the points and surfaces: one contact row per (surface, point)
//   contactPoints   a model's link geometry as contact points
//   floorSurface    the stage's floor in a model's world frame
//   contactsProblem what is wrong with contacts given to the integrator
//
// A row's gap is the depth by which its sphere enters the surface's solid side,
//   g(q) = offset + radius - normal . p(q) <= 0,
// p the sphere's centre: smooth in q (the centre, not the moving witness point on the sphere).
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "marionette/models/model.hpp"

namespace marionette {

struct ContactPoint {
  std::string link;         // the geometry's name, for reports
  int frame = -1;           // a frame a dynamic variable moves
  Eigen::Vector3d local_m;  // the sphere's centre in frame coordinates
  double radius_m = 0.0;
  std::string name;  // unique among a model's points: a sphere's geometry name, a capsule's two
                     // ends NAME+z and NAME-z (along its local z axis); "" = link
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
// t1 the world x axis projected onto the plane (the y axis where x is nearly normal).
Eigen::Matrix<double, 3, 2> tangentBasis(const Eigen::Vector3d& normal);

struct Contacts {
  std::vector<ContactPoint> points;
  std::vector<ContactSurface> surfaces;
  // Rows surface-major: row = surface * points.size() + point.
  int rows() const { return static_cast<int>(points.size() * surfaces.size()); }
  // Row r's name for reports and tables: "SURFACE/POINT" (e.g. "floor/shin_l-z").
  std::string rowName(int r) const;
};

// The link geometry of `model` as contact points: a sphere's centre, a capsule's two end
// centres with its radius; points that coincide wherever the puppet is (two capsules' ends at
// the joint between them) once, with the larger radius.  Boxes, cylinders and meshes are not
// contact points yet; geometry on a frame the rig moves is skipped.
std::vector<ContactPoint> contactPoints(const Model& model);

// The stage's floor (z = 0 in stage coordinates, solid below) in the world frame of `model`,
// which hangs at model.stage_pose.
ContactSurface floorSurface(const Model& model);

// "" when `contacts` fits `model`, else what is wrong, naming the field: a point's frame that is
// not one the puppet's joints alone move, a centre or radius not finite (or a radius below 0 or
// beyond the stage's range), a surface's normal not a unit vector, its offset not finite or its
// friction not a finite number >= 0.
// VariationalIntegrator refuses such contacts (std::invalid_argument).
std::string contactsProblem(const Model& model, const Contacts& contacts);

}  // namespace marionette
