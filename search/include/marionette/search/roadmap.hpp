// SPDX-License-Identifier: BSD-3-Clause
// The rest-pose roadmap (`prm`): the learning and query phases and the lazy edge checks of
// Esteves, Arechavaleta & Laumond, "Motion Planning for Human-Robot Interaction in Manipulation
// Tasks", IEEE ICMA 2005 (§IV-A, §IV-D), over rest poses of the puppet.  Vertices are
// collision-free rest poses of sampled inputs; an edge moves the inputs from one vertex's values to
// the other's within the speed and acceleration limits (a quintic time scaling), is simulated with
// the real dynamics, collision-checked at every step, and is accepted if the swing then settles
// near the target rest pose within a bounded time.
//
// Contents
//   (RoadmapOptions, sizes, edge motion and settling criteria: roadmap_options.hpp.)
//   RestPoseRoadmap     the graph (Boost.Graph), built once per (model, scene, options), shared
//                       by queries (each works on a copy; only edge verdicts are written back),
//                       saved to / loaded from a text file.
//   QueryResult         what a query returns to the planner.
// Where roadmaps are kept between queries: a RoadmapStore (roadmap_store.hpp).
#pragma once

#include <Eigen/Core>
#include <functional>
#include <istream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "marionette/models/error.hpp"
#include "marionette/environments/collision.hpp"
#include "marionette/problem/goal_rest_pose.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/plan/goal.hpp"
#include "marionette/models/rig_trajectory.hpp"
#include "marionette/search/roadmap_options.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

class RestPoseRoadmap {
 public:
  using Vertex = RestVertex;  // inputs and their rest pose
  enum class EdgeState : unsigned char { Unknown = 0, Valid = 1, Invalid = 2 };
  struct Edge {
    int from = 0, to = 0;
    double move_s = 0.0;    // the quintic move's duration
    double settle_s = 0.0;  // hold after the move until settled (when Valid)
    EdgeState state = EdgeState::Unknown;
    bool from_build = false;  // its verdict found by the learning phase, not by a query
  };
  RestPoseRoadmap(const RestPoseRoadmap&) = delete;  // shared by pointer
  RestPoseRoadmap& operator=(const RestPoseRoadmap&) = delete;

  // The learning phase.  Throws PlanCancelled if cancelled, FieldError("options.planner", ...)
  // when the model and scene leave no roadmap to build (the home pose in collision, fewer than
  // two collision-free rest poses found).
  static std::shared_ptr<RestPoseRoadmap> build(
      CollisionModelPtr collision, const RoadmapOptions& options,
      const std::function<void(int vertices, double elapsed_s)>& progress = {},
      const CancelFn& cancelled = {});
  // Throws RoadmapFileError naming the file and line when it cannot be read, is incomplete or
  // damaged (version 2's checksum), larger than maxFileBytes, declares more vertices or edges
  // than its options make, or was built for another model, scene or options (their
  // fingerprints differ); RoadmapFileUnreadable when it cannot be opened.
  static std::shared_ptr<RestPoseRoadmap> load(const std::string& path, CollisionModelPtr collision,
                                               const RoadmapOptions& options);
  // The same from a stream; `source` names it in errors.
  static std::shared_ptr<RestPoseRoadmap> read(std::istream& in, const std::string& source,
                                               CollisionModelPtr collision,
                                               const RoadmapOptions& options);
  // Atomically (temp file, then rename), version 2: its last line is a checksum of the rest.
  void save(const std::string& path) const;
  // The file's text, as save writes it.
  std::string serialize() const;
  // The largest file a roadmap of this model and these options can make: no more is read.
  static std::size_t maxFileBytes(const Model& model, const RoadmapOptions& options);
  // Takes over the verdicts `other` holds for edges this one has not checked: a roadmap of the
  // same fingerprint and vertices (another server's, read back from a shared folder).  Edge
  // checks are deterministic, so a verdict found by anyone holds for everyone.  Returns how many
  // were taken, or -1 when `other` is another build (its vertices differ).
  int adoptVerdicts(const RestPoseRoadmap& other);

  const RoadmapOptions& options() const { return options_; }
  const std::vector<Vertex>& vertices() const { return vertices_; }
  std::vector<Edge> edges() const;  // a snapshot
  long edgeCount() const;
  double buildTime_s() const { return build_time_s_; }
  const CollisionModelPtr& collisionModel() const { return collision_; }
  // fingerprint(collisionModel(), options()), computed once.
  const std::string& fingerprintId() const { return fingerprint_; }

  // A query's answer.
  struct QueryResult {
    bool found = false;
    bool exact = false;          // the final vertex satisfies the goal
    double goal_distance = 0.0;  // of the final vertex's rest pose
    RigTrajectory inputs;        // settle at the start, then move + hold along the path
    std::vector<int> path;       // roadmap vertex indices (-1 = the start, -2 = a goal vertex
                                 // made for this query)
    long edges_validated = 0, edges_rejected = 0, propagations = 0, collision_checks = 0;
    long roadmap_edges_validated = 0;  // of edges_validated, the roadmap's own (verdicts kept)
    std::string message;
  };
  // The query phase: connect the start (settled first if not at rest) and the goal, A* over
  // edge durations with a speed-limit heuristic, simulate the path's unchecked edges, drop a
  // failing one and search again.  Thread-safe, and queries run in parallel: each works on a
  // copy of the graph taken under the lock, and takes the lock again only to write back the
  // verdicts of the roadmap edges it simulated (valid, with its settling time, or invalid).
  // Those verdicts are all that a query changes: later queries skip the edges found invalid
  // and do not simulate again the ones found valid.  The answer depends only on the arguments
  // and on the verdicts the roadmap holds when the query starts -- unless the caller's deadline
  // (time_limit_s > 0 s; 0: none) cuts the query short (every search in it is bounded by a
  // count).  With
  // `earlier_verdicts` false the query sees the roadmap as built (the learning phase's verdicts
  // only) and depends on its arguments alone; what it finds is still written back.  Throws
  // PlanCancelled.
  QueryResult query(const Eigen::VectorXd& start_q, const Eigen::VectorXd& start_qdot,
                    const Eigen::VectorXd& start_rho, GoalEvaluator& goal, double time_limit_s,
                    unsigned long seed, const CancelFn& cancelled = {},
                    bool earlier_verdicts = true);

  // What a roadmap depends on, as 32 hex digits: a hash of a complete, canonical serialisation
  // of the model (every variable with its limits, softening and defaults, frames, full
  // inertias, named points, strings, geometry), the scene (obstacles, mesh triangles, bounds),
  // the collision options and the roadmap options.  Exact doubles (hexfloat), so any change
  // gives another fingerprint.
  static std::string fingerprint(const CollisionModel& collision, const RoadmapOptions& options);

 private:
  RestPoseRoadmap(CollisionModelPtr collision, RoadmapOptions options);
  struct Graph;
  CollisionModelPtr collision_;
  RoadmapOptions options_;
  std::string fingerprint_;
  std::vector<Vertex> vertices_;
  std::shared_ptr<Graph> graph_;  // with its locks
  double build_time_s_ = 0.0;
};

// A roadmap file that cannot be used: unreadable, truncated, or for another fingerprint.
class RoadmapFileError : public ErrorOf<std::runtime_error> {
 public:
  using ErrorOf<std::runtime_error>::ErrorOf;
};
// One that could not even be opened (permissions, no descriptor left, not a file): its content
// may well be good.
class RoadmapFileUnreadable : public RoadmapFileError {
 public:
  using RoadmapFileError::RoadmapFileError;
};

}  // namespace marionette

#pragma GCC visibility pop
