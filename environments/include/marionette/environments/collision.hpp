// SPDX-License-Identifier: BSD-3-Clause
// Collision checking of a puppet -- its links *and its strings* -- against a stage, with FCL
// (docs/design.md, the stage).
//
// Contents
//   CollisionOptions   string radius, which checks to run, where the model hangs in the stage.
//   ContactPair        what touched what: a link or string of the puppet, and an obstacle,
//                      another link, or the stage bounds.
//   CollisionModel     immutable: the scene's and the links' FCL geometry, the pairs to check.
//   StateCheck         both checks of one state, read the one way every per-sample check reads
//                      them (simulateChecked, checkTrajectory).
//   CollisionChecker   per-thread scratch and the queries: inCollision, clearance, checkState,
//                      and the batch form over a trajectory.
//
// What is checked, for a configuration q (n_q = n_d + n_k: puppet joints and rig inputs, so the
// strings' rig ends are known):
//   - every link geometry (model file `geometry:`) against every obstacle;
//   - every string, as a thin capsule from its puppet point to its rig point, against every
//     obstacle (a string through an obstacle snags: a collision even when both ends are clear).
//     The straight segment is exact for a taut string; a slack string's sag is not modelled;
//   - self-collision between links on frames that are not adjacent (adjacent = one link's frame is
//     the nearest link-carrying ancestor of the other's) and not in the model's
//     `allowed_collisions`; links on one frame never collide with each other;
//   - optionally, strings against the puppet's links other than the one the string is tied to;
//   - the stage bounds, if the scene sets them: every link must stay inside the box.
// Planes (half-spaces) and bounds are handled by support functions (FCL 0.7 has no distance to a
// half-space); everything else by FCL: the scene's obstacles in a broadphase manager
// (dynamic AABB tree), meshes as BVHModel<OBBRSS>, narrowphase by libccd.
//
// Coordinates: results are in the model's world frame (the scene is mapped into it through the
// model's stage pose).  Distances in metres.
//
// Thread safety: a CollisionModel is immutable and may be shared by any number of threads (it
// holds the FCL geometry, meshes' BVHs included, read-only).  A CollisionChecker is one thread's
// scratch (its own FCL objects, broadphase manager and kinematics buffers): give each thread its
// own; they are cheap to make from a shared CollisionModel.
//
// Meshes are triangle surfaces (FCL's BVHModel): a link entirely inside a closed mesh, touching
// none of its triangles, is not detected.  Checking after every integration step catches the
// moment of crossing.
#pragma once

#include <Eigen/Core>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "marionette/environments/scene.hpp"
#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct Contacts;  // models/contact.hpp

struct CollisionOptions {
  double string_radius_m = 0.001;       // strings are capsules this thick
  bool check_strings = true;            // strings against obstacles
  bool check_self = true;               // link against link (non-adjacent, not allowed)
  bool check_strings_vs_links = false;  // strings against the puppet's other links
  bool check_bounds = true;             // links inside the scene's bounds (if it has any)
  // Where the model hangs in the stage; default: the model's stage pose.
  std::optional<Eigen::Isometry3d> stage_pose;
  // Obstacles the puppet may touch (Obstacle::contact: the floor, and planes, spheres, capsules
  // and boxes so marked; the integrator's contacts, sceneContacts) are not collisions: a link
  // collides with one only when it enters it deeper than touch_tolerance_m, and the stage clearance
  // (the forbidden stage) leaves them out, while the clearance to anything keeps them.  Strings
  // still snag on them.  So do two links that touch as self-contacts (framesTouch; spheres,
  // capsules and boxes): a collision only deeper than touch_tolerance_m.  On for every plan
  // (problemCollisionOptions), whose dynamics then carry those touches (CollisionModel::contacts).
  // Off: every obstacle and every self pair is forbidden (the euler and rk4 baselines, whose
  // dynamics do not touch).
  bool touch_contact_surfaces = false;
  double touch_tolerance_m = 1e-3;
};

enum class ContactKind {
  None,
  LinkObstacle,    // first = link, second = obstacle
  StringObstacle,  // first = string, second = obstacle
  LinkLink,        // first, second = links
  StringLink,      // first = string, second = link
  OutOfBounds,     // first = link, second = "stage bounds"; or first = a link or string
                   // beyond 10x the stage's range (kStageRange_m), second = "stage range"
};
const char* contactKindName(ContactKind kind);  // "link-obstacle", ...

// Links are named by their frame (and, where a frame carries several shapes, "frame/geometry").
struct ContactPair {
  ContactKind kind = ContactKind::None;
  std::string first;
  std::string second;
  std::string describe() const;  // "link 'body' and obstacle 'table_top'"
};

struct CollisionResult {
  bool in_collision = false;
  ContactPair pair;  // the first pair found (kind None when clear)
};

// The nearest pair over everything checked (self-collision pairs included), and separately the
// nearest to the stage alone (obstacles and bounds): a hanging arm a few millimetres from the
// body dominates the first, while the second says how close the puppet came to the scene.
// How a clearance reads a pair that overlaps: as 0 (touching or inside, no direction), or as
// minus its penetration depth with its deepest points (an optimizer's constraint that must have a
// gradient inside too; TrajOpt's signed distance: Schulman et al., "Motion planning with
// sequential convex optimization and convex collision checking", IJRR 2014).  Two round shapes'
// depth is exact (FCL's capsule-capsule distance), a box pair's its collision contact's (FCL's
// EPA aborts the process on some of both), any other pair of primitives' EPA's; a pair with a
// mesh reads 0 when it overlaps either way.
enum class Penetration { AsZero, Signed };

struct ClearanceResult {
  // 0 when touching or inside (Penetration::AsZero); with Penetration::Signed, minus the deepest
  // penetration depth found (0 for an overlapping mesh).
  double distance_m = std::numeric_limits<double>::infinity();
  bool in_collision = false;  // distance_m <= 0
  ContactPair pair;           // the closest (or deepest) pair
  // Its nearest points (world); in penetration, each one's point deepest inside the other.
  Eigen::Vector3d point_first_m = Eigen::Vector3d::Zero();
  Eigen::Vector3d point_second_m = Eigen::Vector3d::Zero();
  // What the pair is, by index (for the distance's gradient): the first is a link
  // (CollisionModel::linkFrame) or, for StringObstacle and StringLink, a string of the model;
  // the second is a link for LinkLink and StringLink, else -1 (an obstacle or the bounds:
  // fixed).  -1 when nothing was found.
  int first_index = -1;
  int second_index = -1;
  double stage_distance_m = std::numeric_limits<double>::infinity();  // obstacles + bounds only
  ContactPair stage_pair;
  Eigen::Vector3d stage_point_first_m = Eigen::Vector3d::Zero();  // its nearest points (world)
  Eigen::Vector3d stage_point_second_m = Eigen::Vector3d::Zero();
  int stage_first_index = -1;  // as first_index (the second is always fixed)
  // The nearest pair the puppet may not touch: the stage's, the self pairs that are not
  // self-contacts, strings against links (everything with touch_contact_surfaces off).  What an
  // optimizer whose dynamics carry the touches keeps its margin from.
  double forbidden_distance_m = std::numeric_limits<double>::infinity();
  ContactPair forbidden_pair;
  Eigen::Vector3d forbidden_point_first_m = Eigen::Vector3d::Zero();
  Eigen::Vector3d forbidden_point_second_m = Eigen::Vector3d::Zero();
  int forbidden_first_index = -1;   // as first_index
  int forbidden_second_index = -1;  // as second_index
};

// Both checks of one state, read the one way every per-sample check here reads them: the verdict
// and its pair from inCollision (FCL's collide), the distances from clearance (0 in collision).
struct StateCheck {
  bool in_collision = false;
  ContactPair pair;  // in collision: the first pair found; else the nearest pair
  double clearance_m = std::numeric_limits<double>::infinity();        // 0 in collision
  double stage_clearance_m = std::numeric_limits<double>::infinity();  // obstacles + bounds only
  ContactPair stage_pair;
};

// One sample of a trajectory check.
struct TrajectorySample {
  bool in_collision = false;
  double clearance_m = std::numeric_limits<double>::quiet_NaN();        // NaN unless asked for
  double stage_clearance_m = std::numeric_limits<double>::quiet_NaN();  // NaN unless asked for
};
struct TrajectoryCheck {
  std::vector<TrajectorySample> samples;
  int first_collision = -1;  // index of the first sample in collision, -1 if none
  ContactPair first_pair;    // what touched there
  double min_clearance_m = std::numeric_limits<double>::quiet_NaN();  // when asked for
  int min_clearance_index = -1;
};

class CollisionModel {
 public:
  // Builds the FCL geometry of the scene (mapped into the model's world frame) and of the
  // model's links.  Link meshes are read from their (resolved) paths; throws MeshError.
  CollisionModel(ModelPtr model, ScenePtr scene, CollisionOptions options = {});
  ~CollisionModel();
  CollisionModel(const CollisionModel&) = delete;
  CollisionModel& operator=(const CollisionModel&) = delete;

  const Model& model() const;
  const Scene& scene() const;
  const CollisionOptions& options() const;
  ModelPtr modelPtr() const;
  // The dynamics that go with these checks: with touch_contact_surfaces, what the checker lets
  // the puppet touch, as the integrator's contacts (sceneContacts at the options' stage pose:
  // the contact surfaces, the links touching one another); null without it, or when nothing
  // may touch.  Every simulation judged by this model carries them (IntegratorOptions::contacts),
  // so that a touch the checker allows is one the dynamics hold.  Built once, shared.
  const std::shared_ptr<const Contacts>& contacts() const;

  // Names of the checked things, for reports and tests.
  int linkCount() const;
  std::string linkName(int link) const;
  int linkFrame(int link) const;  // the model frame the link's geometry is fixed in
  // Pairs of links checked for self-collision (indices into links).
  const std::vector<std::pair<int, int>>& selfPairs() const;
  // The triangles of a mesh link as read (scaled, in link coordinates); null for a primitive.
  TriangleMeshPtr linkMesh(int link) const;

 private:
  struct Impl;
  friend class CollisionChecker;  // its scratch is built from the geometry
  const Impl& impl() const { return *impl_; }
  std::unique_ptr<Impl> impl_;
};
using CollisionModelPtr = std::shared_ptr<const CollisionModel>;

class CollisionChecker {
 public:
  explicit CollisionChecker(CollisionModelPtr collision_model);
  ~CollisionChecker();
  CollisionChecker(const CollisionChecker&) = delete;
  CollisionChecker& operator=(const CollisionChecker&) = delete;

  // q: n_q (joints then rig inputs); a q of another size or not finite throws
  // std::invalid_argument.  Stops at the first pair found.
  CollisionResult inCollision(const Eigen::VectorXd& q);

  // Minimum distance over every checked pair (0 if any touches, or minus the deepest
  // penetration: `penetration`), and that pair; and the minimum over the stage's pairs alone.
  ClearanceResult clearance(const Eigen::VectorXd& q,
                            Penetration penetration = Penetration::AsZero);

  // inCollision and clearance at q, combined (see StateCheck).
  StateCheck checkState(const Eigen::VectorXd& q);

  // The batch form for states already computed (a simulation that checks as it goes is
  // simulateChecked, checked_simulation.hpp): each column of `q_columns` (n_q x N) is a sample,
  // checked by inCollision, and with_clearance by checkState.  With stop_at_first_collision the
  // samples after it are left unchecked (in_collision false, NaN).
  TrajectoryCheck checkTrajectory(const Eigen::MatrixXd& q_columns, bool with_clearance,
                                  bool stop_at_first_collision = false);

  const CollisionModel& collisionModel() const { return *model_; }

 private:
  struct Scratch;
  CollisionModelPtr model_;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace marionette

#pragma GCC visibility pop
