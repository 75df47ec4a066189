// SPDX-License-Identifier: BSD-3-Clause
// What a planner returns: the rig's input sequence at the output rate, and what the verifying
// re-simulation of exactly those inputs predicts.  A light library (Eigen and the models' headers;
// no OMPL, FCL or assimp): the executor and the viewer read plans through it without linking the
// planner.
//
// Contents
//   PlanStatistics   planner time, tree / roadmap size, propagations, collision checks.
//   PlanOutcome      exact, approximate, or nothing found.
//   PlanQuality      smoothness, string catches, tension peaks, swing after the end.
//   PlanPrediction   the verifying re-simulation: states, tensions, clearances, points per sample.
//   PerformanceTracking  a performance's targets and tracking errors.
//   Plan             the request, the inputs (N x n_k at rate_hz) and the re-simulation's verdict;
//                    extensions: statistics, quality, a performance's tracking, feedback gains.
//   requireFiniteNumbers   every number of a plan finite before it is returned.
// The files: plan_file.hpp.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "marionette/control/tracking_gains.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/plan/targets.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct PlanStatistics {
  std::string planner;
  double planning_time_s = 0.0;      // inside the planner (OMPL solve, or roadmap query)
  double verification_time_s = 0.0;  // resampling, re-simulation and re-checking
  double total_time_s = 0.0;
  long propagations = 0;              // integrator steps taken while planning
  long collision_checks = 0;          // states checked against the stage while planning
  long tree_states = 0;               // tree planners: motions added to the tree
  long roadmap_vertices = 0;          // prm
  long roadmap_edges = 0;             // prm: edges in the roadmap (all states)
  long edges_validated = 0;           // prm: edges simulated during this query
  long edges_rejected = 0;            // prm: edges that failed and were removed
  double roadmap_build_time_s = 0.0;  // prm: 0 when the roadmap was loaded or cached
  double best_goal_distance = std::numeric_limits<double>::infinity();  // as the planner saw it
  // Tree planners: what ended the search, "goal", "propagations", "deadline", or when the
  // planner returned on its own its OMPL status ("Invalid goal", "Invalid start", ...); empty for
  // the roadmap.  Not in plan files (the benchmark logs it as OMPL's status).
  std::string search_ended;
};

// What a puppeteer would judge a motion by (problem/plan_quality.hpp measures it): the plan
// re-simulated and then held `settle_s` at its last inputs.
struct PlanQuality {
  bool measured = false;
  double duration_s = 0.0;
  Eigen::VectorXd input_jerk_rms;  // n_k: rms third difference of each input (units / s^3)
  double input_jerk_rms_overall = 0.0;  // rms over every input
  // Loaded strings (a static load of at least 0.05 N at the start or at rest after the end)
  // going from slack to taut, over the motion and the hold.
  int string_catches = 0;
  // Slack -> taut switches of any string, over the motion and the hold, whose tension within
  // 0.1 s exceeds 3 times the string's load scale (the larger of its static tensions, and at
  // least a tenth of the largest string's): a catch a puppeteer would see jerk the puppet.
  int snaps = 0;
  // The first snap: its string and when it went taut (s from the start; past duration_s, in
  // the hold).  Empty and 0 without a snap.
  std::string first_snap_string;
  double first_snap_t_s = 0.0;
  // Max over loaded strings of peak tension / the larger of its static tensions at the start and
  // at rest at the last inputs; which string, and when (s from the start).
  double peak_tension_ratio = 0.0;
  std::string peak_tension_string;
  double peak_tension_t_s = 0.0;
  double settle_s = 1.0;
  // Over the hold's second half: the puppet's kinetic energy at its end (J) and the rms of
  // every joint's speed (rad/s or m/s); the joint that swings most, and its speed's rms.
  double residual_kinetic_energy_J = 0.0;
  double residual_joint_speed_rms = 0.0;
  std::string swing_joint;
  double swing_joint_speed_rms = 0.0;
  // (The motion's clearances are the plan's own: Plan::min_clearance_m, min_stage_clearance_m.)
};

enum class PlanOutcome { Exact, Approximate, NotFound };
const char* toString(PlanOutcome outcome);  // "exact", "approximate", "not-found"

// The verifying re-simulation of a plan's inputs at its output rate, sample by sample (row i is
// time i / rate_hz): the plan file's "predicted".
struct PlanPrediction {
  std::vector<std::string> state_names;   // n_d
  std::vector<std::string> string_names;  // n_s
  Eigen::MatrixXd states;                 // N x n_d
  Eigen::MatrixXd tensions_N;             // N x n_s
  Eigen::VectorXd clearance_m;            // N: nearest distance to anything checked
  Eigen::VectorXd stage_clearance_m;      // N: to the scene's obstacles and bounds only
  Eigen::VectorXd goal_distance;          // N: the goal's error measure (rad or m)
  std::vector<std::string> point_names;   // the model's named points
  Eigen::MatrixXd points_m;               // N x 3 n_points: their positions (stage coordinates)
  // The contact pairs that bore load ("SURFACE/POINT", "BODY/POINT": Contacts::rowName), and per
  // sample, over the step ending there (0 at t = 0), each one's normal force and the size of its
  // friction force (N).  Empty when nothing touched.
  std::vector<std::string> contact_names;  // n_c
  Eigen::MatrixXd contact_normal_N;        // N x n_c
  Eigen::MatrixXd contact_friction_N;      // N x n_c
};

// A performance (`marionette perform`): its targets sampled at the plan's rate (a row per sample
// of the motion; the hold after it has none), and how closely the puppet follows them.
struct PerformanceTracking {
  TargetMotion targets;
  TargetTracking tracking;
};

// The core of a plan is what was asked, the input sequence, and the verdict of its verifying
// re-simulation (with the re-simulation itself, `predicted`); the rest are extensions, empty
// unless made: the planner's statistics, the quality figures, a performance's tracking, the
// feedback gains.
struct Plan {
  // What was asked, and the answer.
  std::string model;
  std::string scene;
  std::string goal;   // GoalSpec::describe()
  std::string start;  // the start as given ("rest", "q:...", "rest-of:...")
  unsigned long seed = 0;
  PlanOutcome outcome = PlanOutcome::NotFound;
  std::string message;  // why not exact, when it is not; what a time limit cut short

  // The input sequence: sample i at t = i / rate_hz.
  double rate_hz = 50.0;
  std::vector<std::string> input_names;  // n_k, the model's kinematic variables
  Eigen::MatrixXd inputs;                // N x n_k (m or rad)

  // The verdict of the re-simulation of those inputs, and the re-simulation.
  bool collision_free = false;
  int first_collision = -1;    // sample index, -1 if none
  std::string collision_pair;  // what touched there
  int goal_sample = -1;        // first sample where the goal holds, -1 if never
  double goal_distance_min = std::numeric_limits<double>::infinity();  // over the samples
  double min_clearance_m = std::numeric_limits<double>::infinity();
  double min_stage_clearance_m = std::numeric_limits<double>::infinity();
  int min_stage_clearance_sample = -1;
  // The clearance to the stage the plan was held to (an optimized plan's margin), or 0: below
  // it the plan is approximate.
  double clearance_margin_m = 0.0;
  double max_violation_m = 0.0;  // strings over-stretched, over the re-simulation
  double min_tension_N = 0.0;
  std::vector<std::string> limit_violations;  // empty for every plan a planner returns
  PlanPrediction predicted;

  // Extensions.
  PlanStatistics stats;
  PlanQuality quality;              // measured when quality.measured
  PerformanceTracking performance;  // a performance's; empty otherwise
  // Feedback gains along the plan (`plan --gains`; control/tracking_lqr.hpp computes them): empty
  // unless asked.
  control::TrackingGains gains;

  int samples() const { return static_cast<int>(inputs.rows()); }
  double duration_s() const { return samples() > 0 ? (samples() - 1) / rate_hz : 0.0; }
};

// Throws SimulationError naming the first sample whose inputs, states, tensions, named points or
// feedback gains are not finite, or whose clearances or goal distance are NaN (a clearance with
// nothing in reach is +infinity): what a library checks before a plan leaves it.
void requireFiniteNumbers(const Plan& plan);

// The plan's inputs as a schedule (sample i at i / rate_hz, held before the first), and the
// simulation options that re-simulate exactly them: dt = 1 / rate_hz over the plan's duration
// plus hold_s.
InputSchedule planInputs(const Plan& plan);
SimulationOptions planSimulation(const Plan& plan, double hold_s = 0.0);

}  // namespace marionette

#pragma GCC visibility pop
