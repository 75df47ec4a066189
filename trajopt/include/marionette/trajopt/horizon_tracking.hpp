// SPDX-License-Identifier: BSD-3-Clause
// Targets followed over a receding horizon on the contact-implicit transcription: the predictive
// optimization over the marionette's dynamics of Zimmermann, Poranne, Bern and Coros,
// "PuppetMaster: Robotic Animation of Marionettes", ACM TOG 38(4), 2019, on this project's
// contact-implicit transcription (trajectory_optimization.hpp) in place of their shooting.
//
// Windows of window_s, each advanced by advance_s.  A window starts from the exact state where
// the inputs committed so far leave the puppet (the integrator's re-simulation at the plan's step,
// which is the knots' too, with every contact), its rig history going in (speed and acceleration
// limits hold across windows); its warm start is the previous window's inputs, then the
// reference's, moved into the rig's limits; its modes (which strings pull, which contacts touch)
// are those of the warm start's re-simulation, but a loaded string (1 % of the largest static
// tension) taut from its first taut step on; no string pulls more than 2.5 times its static load
// or than the warm start has it pull (tension_bound says which); its targets are the points' and
// variables' over the window (the last sample's past the motion's end, where the rig holds its
// last inputs, as the plan does, and the swing weighs as settling: weights.settle), and the
// reference inputs held with hold_weight (untargeted limbs stay near the reference instead of
// drifting).  Each window is the
// one window solver the closed loop's controller uses too (predictive_control.hpp): Ipopt solves
// it for at most iterations_per_window; the solution, moved into the rig's limits (an iterate out
// of iterations may not meet the rows yet, and the rig must be able to stop by the motion's end),
// has its first advance_s committed if its re-simulation over the window costs less than the
// warm start's, else the warm start's is (the closed loop also tries half and a quarter of the
// step).  The inputs are all the solver gives: whatever it ends with, the motion is the
// integrator's.
// Counted in iterations: the same setup gives the same inputs on any machine unless `in_time`
// stops it, before a window or within its solve (that window is not used): the rest is then the
// reference, moved into the rig's limits from where the rig is, and the result says where.
//
// Contents
//   HorizonTracking         the motion's targets, its reference inputs, the windows' sizes.
//   HorizonTrackingResult   the inputs committed, windows solved and kept, where a deadline
//                           stopped.
//   trackOverHorizon        the windows solved in turn.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <vector>

#include "marionette/environments/collision.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct HorizonTracking {
  ModelPtr model;
  CollisionModelPtr collision;  // contacts in the re-simulation and the windows, clearance rows
  double rate_hz = 50.0;        // the inputs' rate: the integrator's step and the knots'
  State start;                  // at 1 / rate_hz
  Eigen::MatrixXd reference_inputs;  // S rows of n_k (the first the start's): warm start, hold
  // The rig before the start, the latest first: rho_{-1}, rho_{-2}, ... (empty: standing still
  // at the start's; one row: standing there before it): the windows' speed and acceleration go
  // on from its first two.  Held inputs are taken as held there too.
  Eigen::MatrixXd rig_history;
  // Targets at the S samples, as the transcription takes them, over the whole motion.
  std::vector<int> track_points;
  Eigen::MatrixXd track_targets_m;  // S rows of 3 per point, world frame; NaN: none
  std::vector<double> track_point_weight;  // per point (empty: all 1)
  // Times its weight per sample (S rows of one per point; empty: all 1): where a target matters
  // more (a performance's spans that missed their tolerance, reweighted).
  Eigen::MatrixXd track_sample_weight;
  std::vector<int> track_variables;
  Eigen::MatrixXd track_values;  // S rows, one column each; NaN: none
  std::vector<double> track_variable_scale_m;
  std::vector<int> held_inputs;       // fixed at the start's value throughout
  std::vector<double> input_scale_m;  // n_k: each rig input's unit in metres (a radian as 0.1 m)
  double margin_m = 0.02;             // the windows' clearance rows to the stage
  OptimizationWeights weights;  // the windows' objective
  // The reference inputs' weight (as a tracked variable's, in input_scale_m): a rig input 1 cm
  // off its reference costs hold_weight per second.
  double hold_weight = 0.05;
  // How hard a window's strings may pull, each times 2.5:
  //   WarmStart   its static load at the start (at least a tenth of the largest), or as hard as
  //               the warm start pulls, which keeps the window's start within its bounds;
  //   StaticLoad  that load even where the warm start pulls harder (a performance's second try
  //               where the motion pulls over 3 times);
  //   OwnLoad     its own load, the larger static tension at the start's inputs and at the
  //               reference's last, as a plan's peak tension is judged (plan_quality.hpp): a
  //               lightly loaded string is not let pull a tenth of the largest (only a string
  //               lighter than 0.05 N at both keeps that floor).  The third try.
  // A window whose warm start does not re-simulate has no bound, and one that keeps its warm
  // start keeps its pull.
  enum class TensionBound { WarmStart, StaticLoad, OwnLoad };
  TensionBound tension_bound = TensionBound::WarmStart;
  // 0.8 s windows advanced by 0.4 s, 20 iterations each (docs/decisions/0014: longer windows and
  // more iterations tracked no better and left less of a performance's time for its end).
  double window_s = 0.8;
  double advance_s = 0.4;
  int iterations_per_window = 20;
  std::function<bool()> in_time;  // asked before each window and each iteration; empty: always
  std::function<void(int window, int windows, double cost)> progress;
};

struct HorizonTrackingResult {
  Eigen::MatrixXd inputs;  // S rows of n_k
  int windows = 0;         // solved
  int windows_planned = 0;
  int iterations = 0;    // the solver's, over all windows
  int kept_warm = 0;     // windows where every step to the solution re-simulated costlier
  int solve_failed = 0;  // windows the solver ended without a motion for (the warm start's kept)
  int stopped_at = -1;   // the sample where in_time stopped it (the reference's from there), or -1
};

// Throws std::invalid_argument when the setup's sizes do not fit; SimulationError when no
// committed inputs can be re-simulated from the start (neither the solution's nor the warm
// start's); PlanCancelled from the thread's CancelScope.
HorizonTrackingResult trackOverHorizon(const HorizonTracking& setup);

}  // namespace marionette

#pragma GCC visibility pop
