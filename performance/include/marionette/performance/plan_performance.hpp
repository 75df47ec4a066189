// SPDX-License-Identifier: BSD-3-Clause
// From a performance's targets to rig commands (docs/performance.md; Egger 2013, §3.2, and
// Zimmermann, Poranne, Bern and Coros, "PuppetMaster: Robotic Animation of Marionettes", ACM TOG
// 38(4), 2019):
//   1. the kinematic step: at key frames, the rig inputs whose rest pose puts the points on
//      their targets (damped Gauss-Newton on rest poses, each frame continued from the last),
//      clear of the stage by the margin; the targets a point cannot be held on, fitted into its
//      reach (retargeting); then a B-spline through the frames' inputs within every speed and
//      acceleration limit (a least-squares fit with the limits as linear constraints, Ipopt);
//   2. the dynamics step: a receding horizon on the contact-implicit transcription (0.8 s
//      windows, each from the exact state the last one left, strings and contacts as
//      complementarity) tracking the points, holding the rest near the spline's inputs;
//   3. the end settled where holding the last inputs leaves it swinging: by the transcription,
//      or where its tail is not kept by the windows holding the puppet at rest.
// Each is re-simulated and measured against the targets; targets the puppet cannot follow are
// reported per point and time span, and the nearest feasible motion is played.  It is exact
// only when it is a show: its targets followed and the plan stage-worthy.
//
// Contents
//   PerformanceOptions   rate, margin, tolerance, key rate, held inputs, the optimizer's weights.
//   PerformanceRequest   model, scene, targets, options.
//   planPerformance      a verified Plan with targets, tracking and quality.
//   performanceStageThresholds   what its stage-worthiness is judged by.
//   checkPerformanceOptions / checkPerformanceTargets   what planPerformance checks first.
#pragma once

#include <string>
#include <vector>

#include "marionette/environments/collision.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/plan/plan.hpp"
#include "marionette/plan/targets.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/problem/plan_quality.hpp"
#include "marionette/problem/progress.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct PerformanceOptions {
  double rate_hz = 50.0;       // output rate (and the integrator's step)
  double key_rate_hz = 10.0;   // the kinematic step's key frames per second
  double margin_m = 0.02;      // clearance to the stage kept by both steps
  double tolerance_m = 0.02;   // a point farther than this from its target is reported
  // Retargeting into reach (reach_fit.hpp): a point the kinematic step cannot hold within
  // tolerance_m of its clip follows the clip fitted to where it can (per stage axis, a scale in
  // [0, 1] and an offset), and the plan is measured against the fitted tracks; exact only when
  // each fitted track is within reach_tolerance_m (rms) of its clip.
  bool retarget = true;
  double reach_tolerance_m = 0.06;
  double settle_s = 1.0;       // the hold after the motion (in the plan, and penalized)
  double knots_per_s = 4.0;    // B-spline segments per second of the rig's motion
  // The caller's deadline on both steps together (s; 0: none).  Iterations decide the show; a
  // deadline only stops a step, and the plan's message says which and where.
  double time_limit_s = 0.0;
  bool dynamics = true;        // false: the kinematic step's motion is the plan
  // Inputs held at the start's values throughout (a limb disabled: editing.hpp limbInputs).
  std::vector<int> disable;  // kinematic variable indices
  // The whole puppet in the dynamics step's objective: every named point without a target is
  // held near where the rest poses of the kinematic step's inputs put it, with this weight of a
  // target's (0: none), so that limbs nobody asked to move follow as a slowly moved puppet's
  // would instead of flailing.  Points named in free_points are left out of it.
  double calm_weight = 0.1;
  std::vector<std::string> free_points;
  // The dynamics step's objective (the transcription's terms over each window): effort, jerk,
  // swing, tension_rate and tracking; the others (the plans' settle hold, slack, duration and
  // clearance terms) have no part in it and are refused.  The tension rate is light: at the
  // plans' 1, a catch's spike outweighs centimetres of tracking in every window with one.
  OptimizationWeights weights = [] {
    OptimizationWeights w;
    w.tracking = 1.0;
    w.tension_rate = 0.01;
    return w;
  }();
};

struct PerformanceRequest {
  ModelPtr model;
  ScenePtr scene;               // null = the empty stage
  CollisionModelPtr collision;  // optional: built from model and scene when null, touching
                                // (problemCollisionOptions)
  TargetMotion targets;         // stage coordinates
  PerformanceOptions options;
};

// Throws FieldError for bad options or targets ("options.rate_hz", "targets.points[2]" ...),
// PlanCancelled when `cancelled` says stop.  The plan: inputs over the motion and the settle
// hold, verified as every plan, targets sampled at rate_hz, tracking after each step, quality
// (with a 1 s hold); progress phases "kinematic" and "optimize".  Its outcome is exact only when
// it is a show: collision-free with the margin and within every limit, every target followed
// within the tolerance, every fitted track within the reach tolerance of its clip, and
// stage-worthy by performanceStageThresholds; else approximate, its message naming each
// shortfall, the first first.
Plan planPerformance(const PerformanceRequest& request, const ProgressFn& progress = {},
                     const CancelFn& cancelled = {});
// What a performance is judged stage-worthy by: a plan's thresholds (plan_quality.hpp), the
// stage kept at the performance's margin where that is smaller.
StageThresholds performanceStageThresholds(const PerformanceOptions& options);
void checkPerformanceOptions(const Model& model, const PerformanceOptions& options);
// The most samples a performance's motion is planned at (its duration times rate_hz; the hold
// after it adds at most 10 s): 600 s at 100 Hz, or 60 s at 1 kHz.  Each is an integrator step of
// every rollout.
constexpr double kMaxPerformanceSamples = 60000;
// The targets' points and variables are the model's; at least two samples, at most
// kMaxPerformance_s and kMaxPerformanceSamples.
void checkPerformanceTargets(const Model& model, const TargetMotion& targets,
                             const PerformanceOptions& options);

}  // namespace marionette

#pragma GCC visibility pop
