// SPDX-License-Identifier: BSD-3-Clause
// The 3-D viewer (`marionette render`): a motion of one puppet in one stage, turned into one
// self-contained HTML page -- three.js bundled in at build time, the data inline -- that opens
// from disk with no server and no network (clients/viewer/web/).
//
// Contents
//   ViewError        what a bad plan or motion throws: names the file and the field.
//   Motion           what to show: configurations and string tensions sampled at a rate, plus
//                    the header facts and quality figures, the named points to trace and the
//                    goal regions.
//   motionOfPlan     a plan file's verified re-simulation.
//   motionAtRest     the rest pose of the default inputs (one sample).
//   motionOfInputs   a simulation (the VI) of an input schedule from rest.
//   ViewOptions      where the page opens, the traced points, a second motion to compare.
//   writeViewJson    the view document: per sample, every link frame's pose, the strings' ends
//                    and lengths, tensions, inputs, named points, and -- with a scene -- FCL's
//                    clearance per sample; the scene's obstacles (meshes as triangles), bounds.
//                    The same again under "compare" for a compared motion.
//   writeViewPage    the page: clients/viewer/web/src/page.html with the document and the
//                    bundled script inlined.
//
// Coordinates in the document are the stage's (z up, floor at z = 0; scene files use them): the
// model's world frame is mapped through Model::stage_pose.  Lengths m, angles rad, forces N.
#pragma once

#include <Eigen/Core>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "marionette/models/error.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/model.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/plan/plan.hpp"

namespace marionette::viewer {

class ViewError : public ErrorOf<std::invalid_argument> {
 public:
  using ErrorOf<std::invalid_argument>::ErrorOf;
};

struct GoalRegion {
  std::string point;                                     // the named point that must reach it
  Eigen::Vector3d position_m = Eigen::Vector3d::Zero();  // stage coordinates
  double radius_m = 0.0;
};

struct Motion {
  std::string title;
  std::string name;  // what the legends call it when two are compared: a plan's file name
  std::vector<std::pair<std::string, std::string>> info;  // header facts, in order
  std::vector<std::string> problems;  // listed beside the view ("collision at 1.2 s")
  // A plan's quality figures (PlanQuality), formatted with their units; empty when the plan
  // file has none.  The header shows them side by side when two plans are compared.
  std::vector<std::pair<std::string, std::string>> quality;
  double rate_hz = 50.0;
  Eigen::MatrixXd q;           // N x n_q: joints then rig inputs; row i at t = i / rate_hz
  Eigen::MatrixXd tensions_N;  // N x n_s (0 when slack)
  std::vector<std::string> trace_points;  // named points whose paths show at first
  std::vector<GoalRegion> goals;
  int goal_sample = -1;  // where the goal first holds, -1 if never (or no goal)
  // A performance's targets (plan.performance.targets): named points' target positions per sample, rows at
  // rate_hz from t = 0 (fewer rows than q: none during the settle hold); NaN where a point has
  // none.  Drawn as ghost markers beside the points, their errors plotted.
  std::vector<std::string> performance_points;
  Eigen::MatrixXd performance_m;  // rows x 3 P, stage coordinates
  // The contact pairs that bore load (plan.predicted.contact_names) and their normal and friction
  // forces per sample (N x C, N): drawn where they touch, their normal forces plotted.
  std::vector<std::string> contact_names;
  Eigen::MatrixXd contact_normal_N, contact_friction_N;
};

// The plan's inputs and predicted states.  Throws ViewError when the plan is for another model
// (its name, input, state or string names differ from `model`'s) or has no predicted states.
// Point goals become goal regions and their points are traced; a performance's targets are
// kept and their points traced; the motion's name is the source's file name (without its
// folder).
Motion motionOfPlan(const Plan& plan, const std::string& plan_source, const Model& model);

// The rest pose of the model's default inputs.  Throws ViewError when it cannot be found.
Motion motionAtRest(const ModelPtr& model);

// Simulates `inputs` with the midpoint VI from rest at step dt_s for duration_s; one sample per
// step.  Throws SimulationError (a failed step) or FieldError ("dt_s", "duration_s").
Motion motionOfInputs(const ModelPtr& model, const InputSchedule& inputs,
                      const std::string& inputs_source, double dt_s, double duration_s);

// Camera directions named as the audience sees the stage -- they sit at -y, and puppets face
// +x: "front" (from the audience, a little above the stage's floor), "side" (from the
// audience's right, +x, as high), "top" (from above, +y up on the image), or "X,Y,Z".  Throws
// FieldError("camera") for anything else or a zero vector.
Eigen::Vector3d parseCameraDirection(const std::string& text);

struct ViewOptions {
  double at_s = 0.0;                      // where the page opens (a URL's ?at= overrides it)
  std::vector<std::string> trace_points;  // replaces the motion's when not empty
  // Another motion of the same model (not owned; null for none), shown in the same view as a
  // translucent ghost and in the plots dashed (`marionette render A.json --compare B.json`).
  // The timeline spans the longer of the two; the shorter holds its last sample.
  const Motion* compare = nullptr;
  // The camera looks at what `fit` frames from this direction (stage coordinates, any length):
  // by default from the audience, who sit at -y ("front").  The page's "reset view" returns to
  // it.
  Eigen::Vector3d camera_direction = parseCameraDirection("front");
  enum class Fit {
    Puppet,  // the puppet's links over the whole motion (the strings' rig ends may be cut off)
    Motion,  // everything that moves: links, strings to the rig, traced points, targets
    Stage,   // that and the scene's bounds
  };
  Fit fit = Fit::Puppet;
  // Point clouds drawn as dots (`marionette reach`: where a point can be held, or swung to),
  // stage coordinates; framed with the puppet.
  struct Cloud {
    std::string point;  // the named point whose cloud it is: one colour per point
    std::string name;   // "hand_r held"
    Eigen::Matrix3Xd points_m;
    bool faint = false;  // smaller, translucent dots
  };
  std::vector<Cloud> clouds;
};
// "puppet", "motion" or "stage"; FieldError("fit") otherwise.
ViewOptions::Fit parseFit(const std::string& text);

// scene may be null (no obstacles, no clearance).  Throws FieldError("trace_points") for an
// unknown traced point, MeshError for a link mesh that cannot be read, and ViewError (naming the
// motion) for a motion whose sizes do not fit the model.
void writeViewJson(const ModelPtr& model, const ScenePtr& scene, const Motion& motion,
                   const ViewOptions& options, std::ostream& out);

// The whole page (writeViewJson's document inlined).  Same errors.
void writeViewPage(const ModelPtr& model, const ScenePtr& scene, const Motion& motion,
                   const ViewOptions& options, std::ostream& out);

}  // namespace marionette::viewer
