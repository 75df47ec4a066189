// SPDX-License-Identifier: BSD-3-Clause
// The puppet description: an immutable tree of frames with masses, named points, strings,
// collision geometry and actuator limits (Johnson & Murphey, "Dynamic Modeling and Motion Planning
// for Marionettes: Rigid Bodies Articulated by Massless Strings", ICRA 2007, §V; Schultz & Murphey,
// ACC 2013, §III-B).
//
// Contents
//   Model          the immutable description, shared by every thread (per-thread scratch lives in
//                  the algorithms that use it, e.g. VariationalIntegrator).
//   ModelBuilder   builds and validates a Model in code; the YAML loader (model_io.hpp) uses it
//                  too, so a model from a file and the same model built in code are identical.
//   ModelError     what a bad description throws: names the file, line and field when known.
//
// Conventions: SI units, z up, gravity along -z.  The configuration vector q has n_q = n_d + n_k
// entries: the dynamic variables q_d first (puppet joints), then the kinematic variables rho
// (rig coordinates = motor setpoints), each in declaration order.
#pragma once

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "marionette/models/shape.hpp"
#include "marionette/models/source_error.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// A model description error (what() reads "file:line: field: message").
class ModelError : public SourceError {
 public:
  using SourceError::SourceError;
};

// Joint limit [lower, upper].  Two kinds (docs/design.md, the puppet model):
//  - a hard stop (stiffness = damping = 0, the default): a unilateral constraint like a string,
//    exact, with an inelastic impact when the joint reaches it;
//  - a spring-damper beyond the limit (Egger, BSc thesis, ETH Zurich 2013, eq. 2.12) when
//    stiffness or damping is set, faded in over the first `softening` of penetration so the
//    dynamics stay smooth (see jointLimitTerms).
struct JointLimit {
  double lower = -std::numeric_limits<double>::infinity();
  double upper = std::numeric_limits<double>::infinity();
  double stiffness = 0.0;   // N*m/rad (or N/m for a translation)
  double damping = 0.0;     // N*m*s/rad (or N*s/m)
  double softening = 0.05;  // rad (or m)
  bool isSpring() const { return stiffness > 0.0 || damping > 0.0; }
  bool isStop() const { return !isSpring() && (std::isfinite(lower) || std::isfinite(upper)); }
};

// A joint's passive stiffness: a linear spring toward `neutral`, potential k (q - neutral)^2 / 2,
// for a joint that cloth, leather or a loose pin holds near a posture (MuJoCo's joint `stiffness`
// and `springref`).  Stiffness 0, the default, is none.
struct JointSpring {
  double stiffness = 0.0;  // N*m/rad (or N/m for a translation)
  double neutral = 0.0;    // rad (or m)
};

struct DynamicVariable {
  std::string name;
  double initial = 0.0;  // starting guess for rest poses (rad or m)
  double damping = 0.0;  // viscous joint damping, N*m*s/rad (or N*s/m)
  JointLimit limit;
  JointSpring spring;
  SourceRef source;
};

// A rig coordinate: perfectly tracked by its motor (Schultz & Murphey, ACC 2013 §II-A).
struct KinematicVariable {
  std::string name;
  double default_value = 0.0;  // value when no input says otherwise (rad or m)
  double lower = -std::numeric_limits<double>::infinity();  // actuator range
  double upper = std::numeric_limits<double>::infinity();
  double max_speed = std::numeric_limits<double>::infinity();  // per second
  double max_accel = std::numeric_limits<double>::infinity();  // per second^2
  SourceRef source;
};

enum class JointType { Fixed, Rotate, Translate };

// A frame is its parent's frame times one transform: a constant SE(3) offset, or a rotation /
// translation about a unit axis (in the parent's coordinates) by a configuration variable.
struct Frame {
  std::string name;
  int parent = -1;  // index into Model::frames, -1 = world
  JointType type = JointType::Fixed;
  Eigen::Isometry3d offset = Eigen::Isometry3d::Identity();  // Fixed only
  Eigen::Vector3d axis = Eigen::Vector3d::UnitZ();           // Rotate / Translate
  int variable = -1;                                         // index into q for Rotate / Translate
  SourceRef source;
  // Derived by ModelBuilder::build for fast kinematics: the coordinate axis (0, 1, 2) a joint
  // turns about and its sign, or -1 for a general axis; whether a Fixed offset is a pure
  // translation.
  int axis_index = -1;
  double axis_sign = 1.0;
  bool pure_translation = false;
};

// A rigid mass: total mass, centre of mass and inertia about the COM, both in frame coordinates.
struct Mass {
  std::string name;
  int frame = -1;
  double mass_kg = 0.0;
  Eigen::Vector3d com_m = Eigen::Vector3d::Zero();
  Eigen::Matrix3d inertia_kgm2 = Eigen::Matrix3d::Zero();  // about the COM, symmetric positive
  SourceRef source;
};

// A named point fixed in a frame (string attachments, task-space targets such as a hand).
struct Point {
  std::string name;
  int frame = -1;
  Eigen::Vector3d position_m = Eigen::Vector3d::Zero();
  SourceRef source;
};

// A massless string from a puppet point to a rig point.  Unilateral: it can pull, never push,
// and never stretch beyond its length (Johnson & Murphey, ICRA 2007 §IV).  Length is a kinematic
// variable (a winch) or a constant.
struct String {
  std::string name;
  int puppet_frame = -1;
  Eigen::Vector3d puppet_point_m = Eigen::Vector3d::Zero();
  int rig_frame = -1;
  Eigen::Vector3d rig_point_m = Eigen::Vector3d::Zero();
  int length_variable = -1;  // index into q (a kinematic variable), or -1 for constant
  double length_m = 0.0;     // used when length_variable < 0
  SourceRef source;
};

// Collision geometry attached to a frame (used by environments/): a shape (shape.hpp; not a
// plane) posed in the frame's coordinates.
struct Geometry {
  std::string name;
  int frame = -1;
  Shape shape;  // a mesh's path is resolved against the model file's folder
  Eigen::Isometry3d pose = Eigen::Isometry3d::Identity();  // in frame coordinates
  SourceRef source;
};

// How the puppet's links touch one another (the model file's `contacts:` section,
// docs/model-format.md): every two links that may not overlap -- on frames neither of which is
// the nearest geometry-carrying ancestor of the other, and not in allowed_collisions -- touch as
// unilateral contacts with Coulomb friction (contact.hpp, selfContacts), except the excluded
// pairs, which pass through each other.
constexpr double kDefaultSelfFriction = 0.3;  // a puppet's painted wood on wood or cloth
struct SelfContactSpec {
  bool enabled = true;
  double friction = kDefaultSelfFriction;     // Coulomb's mu between links, >= 0
  std::vector<std::pair<int, int>> excluded;  // pairs of frames (by index)
  struct PairFriction {
    int frame_a = -1, frame_b = -1;
    double friction = kDefaultSelfFriction;
  };
  std::vector<PairFriction> pair_friction;  // a pair's own mu (the later entry wins)
  // The friction between links on frames a and b.
  double frictionOf(int a, int b) const;
};

// The largest model ModelBuilder::build accepts (docs/model-format.md, limits), checked before
// anything is built: about ten times the largest built-in puppet (marionette25: 25 joints, 21
// rig inputs).  Every algorithm's cost grows with these (a step's Newton matrix is dense in n_d
// plus the taut strings), so they bound what one model -- one request -- can take.
struct ModelLimits {
  static constexpr int kFrames = 512;
  static constexpr int kDynamic = 256;
  static constexpr int kKinematic = 256;
  static constexpr int kMasses = 512;
  static constexpr int kPoints = 512;
  static constexpr int kStrings = 128;
  static constexpr int kGeometry = 512;
  static constexpr int kAllowedCollisions = 4096;
};
// The longest move an input's limits may ask for (s): crossing its range on a quintic at its
// max_speed and max_accel, or stopping from max_speed.  A model whose limits make a motion longer
// is refused when it is built, not sampled step by step (a 1 mm/s winch made hour-long moves that
// pinned the planners).  As long as the longest performance.
constexpr double kMaxMove_s = 600.0;
constexpr double kMaxGravity_mps2 = 1000.0;  // ~100 g: a model's gravity is in [0, this]
constexpr double kMaxFriction = 10.0;  // a friction coefficient (model, scene) is in [0, this]

class Model {
 public:
  std::string name;
  std::string description;
  std::string source_file;     // where it was loaded from ("" if built in code)
  double gravity_mps2 = 9.81;  // in [0, kMaxGravity_mps2]
  // Where the model hangs in a stage (scene files are written in stage coordinates, floor at
  // z = 0): the pose of this model's world frame -- the rig's -- in stage coordinates.
  Eigen::Isometry3d stage_pose = Eigen::Isometry3d::Identity();

  std::vector<DynamicVariable> dynamic;
  std::vector<KinematicVariable> kinematic;
  std::vector<Frame> frames;  // parents always before children
  std::vector<Mass> masses;
  std::vector<Point> points;
  std::vector<String> strings;
  std::vector<Geometry> geometry;
  // Pairs of frames (by index) allowed to touch: adjacent links are implied; these are extra.
  std::vector<std::pair<int, int>> allowed_collisions;
  SelfContactSpec self_contact;

  int nd() const { return static_cast<int>(dynamic.size()); }
  int nk() const { return static_cast<int>(kinematic.size()); }
  int nq() const { return nd() + nk(); }
  int nstrings() const { return static_cast<int>(strings.size()); }

  // Lookups by name; -1 if absent.  variableIndex returns the index into q.
  int frameIndex(const std::string& name) const;
  int variableIndex(const std::string& name) const;
  int pointIndex(const std::string& name) const;
  int stringIndex(const std::string& name) const;
  std::string variableName(int q_index) const;
  bool isDynamic(int q_index) const { return q_index >= 0 && q_index < nd(); }

  // The rig inputs (indices into rho, ascending) that set string s's length or move its rig end.
  std::vector<int> stringInputs(int s) const;
  // The rig inputs that move point p through its own limb's strings: those attached to the
  // point's frame, to a frame above it or to one below it (not another limb's).
  std::vector<int> pointInputs(int p) const;

  Eigen::VectorXd defaultInputs() const;  // n_k: each kinematic variable's default
  // The configuration vector q (n_q) from its dynamic part (n_d) and the rig's (n_k).
  Eigen::VectorXd configuration(const Eigen::VectorXd& q_d, const Eigen::VectorXd& rho) const;
  Eigen::VectorXd initialDynamic() const;  // n_d: each dynamic variable's initial guess
  Eigen::VectorXd dampingVector() const;   // n_d: joint damping

  // ---- Derived structure (filled by ModelBuilder::build) -----------------------------------
  // For every frame: the variable indices (into q) of the non-fixed frames from the root down to
  // and including this frame.
  std::vector<std::vector<int>> frame_variable_chain;
  // For every dynamic variable: its frame, and the dynamic variables that are its ancestors or
  // itself (root first).
  std::vector<int> dynamic_frame;
  std::vector<std::vector<int>> dynamic_ancestors;
  // Frames carrying at least one mass, or having such a frame below them.
  std::vector<char> frame_has_mass_below;
  // Frames that some dynamic variable moves (the puppet); the others move only with the rig.
  std::vector<char> frame_moved_by_dynamic;
  // Masses attached to each frame.
  std::vector<std::vector<int>> frame_masses;
  // Joint stops as unilateral constraint rows g = sign (q_var - bound) <= 0, one per finite bound
  // of a limit that is a stop (upper: sign +1, lower: sign -1).
  struct StopRow {
    int variable;
    double sign;
    double bound;
  };
  std::vector<StopRow> stops;
};

using ModelPtr = std::shared_ptr<const Model>;

// Builds a Model item by item; build() validates everything and throws ModelError naming the
// offending item.  Frames may be added in any order (parents are resolved by name at build()).
class ModelBuilder {
 public:
  explicit ModelBuilder(std::string name);
  ~ModelBuilder();
  ModelBuilder(const ModelBuilder& other);
  ModelBuilder& operator=(const ModelBuilder& other);
  // A moved-from builder may only be assigned to, copied or destroyed.
  ModelBuilder(ModelBuilder&&) noexcept;
  ModelBuilder& operator=(ModelBuilder&&) noexcept;

  ModelBuilder& setDescription(std::string text);
  ModelBuilder& setSourceFile(std::string path);
  ModelBuilder& setGravity(double g_mps2);
  ModelBuilder& setStagePose(const Eigen::Isometry3d& pose);

  ModelBuilder& addDynamic(DynamicVariable v);
  ModelBuilder& addKinematic(KinematicVariable v);
  // parent "" or "world" means the world frame.  A fixed frame is its parent times `offset`; a
  // joint frame rotates about (Rotate) or slides along (Translate) `axis`, in its parent's
  // coordinates, by the named dynamic or kinematic variable.
  ModelBuilder& addFixedFrame(const std::string& name, const std::string& parent,
                              const Eigen::Isometry3d& offset, SourceRef src = {});
  ModelBuilder& addJointFrame(const std::string& name, const std::string& parent, JointType type,
                              const Eigen::Vector3d& axis, const std::string& variable,
                              SourceRef src = {});
  ModelBuilder& addMass(const std::string& name, const std::string& frame, double mass_kg,
                        const Eigen::Vector3d& com_m, const Eigen::Matrix3d& inertia_kgm2,
                        SourceRef src = {});
  ModelBuilder& addPoint(const std::string& name, const std::string& frame,
                         const Eigen::Vector3d& position_m, SourceRef src = {});
  // length: a kinematic variable name, or empty with length_m the constant length.
  ModelBuilder& addString(const std::string& name, const std::string& puppet_frame,
                          const Eigen::Vector3d& puppet_point_m, const std::string& rig_frame,
                          const Eigen::Vector3d& rig_point_m, const std::string& length_variable,
                          double length_m, SourceRef src = {});
  ModelBuilder& addGeometry(Geometry g, const std::string& frame);
  ModelBuilder& allowCollision(const std::string& frame_a, const std::string& frame_b,
                               SourceRef src = {});
  // The contacts: section (SelfContactSpec): whether links touch one another, their friction,
  // a pair that passes through itself, a pair's own friction.
  ModelBuilder& setSelfContact(bool enabled, double friction, SourceRef src = {});
  ModelBuilder& excludeContact(const std::string& frame_a, const std::string& frame_b,
                               SourceRef src = {});
  ModelBuilder& setContactFriction(const std::string& frame_a, const std::string& frame_b,
                                   double friction, SourceRef src = {});

  // Validates and returns the model.  Throws ModelError.
  ModelPtr build() const;

 private:
  struct Impl;  // the items added so far, and build()'s steps (models/src/model_builder.hpp)
  std::unique_ptr<Impl> impl_;
};

}  // namespace marionette

#pragma GCC visibility pop
