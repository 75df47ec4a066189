// SPDX-License-Identifier: BSD-3-Clause
// One checked simulation, used by every front end: run the integrator over an input schedule
// and check every sample against the stage -- collision (the first pair FCL finds), clearance to
// anything and to the stage alone -- and report what happened.  `marionette simulate`, the
// service's Simulate and the planner's verification of every plan all go through it, so they
// agree on what collided first and how close it came.
//
// Contents
//   CheckedSample              one sample: the simulation row and, with a stage, its check.
//   CheckedSimulationOptions   whether to stop at the first collision.
//   CheckedSimulationReport    the integrator's summary and the stage's: first collision (time,
//                              pair), samples in collision, minimum clearances and their pairs.
//   simulateChecked()          runs it; the callback sees every sample and says whether to go on.
#pragma once

#include <functional>
#include <limits>

#include "marionette/environments/collision.hpp"
#include "marionette/models/simulation.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct CheckedSample {
  int index = 0;              // 0 at t = 0, then one per step
  const SimulationRow& row;   // the state (valid during the callback only)
  bool checked = false;       // a stage was given
  bool in_collision = false;  // CollisionChecker::inCollision at this state
  double clearance_m = std::numeric_limits<double>::quiet_NaN();  // 0 in collision; NaN unchecked
  double stage_clearance_m = std::numeric_limits<double>::quiet_NaN();  // obstacles and bounds
  const ContactPair* pair = nullptr;        // in collision: what touched; else the nearest pair
  const ContactPair* stage_pair = nullptr;  // the nearest pair of the stage alone
};
// Returns whether to go on; false ends the run after this sample (report.stopped_by_caller).
using CheckedSampleFn = std::function<bool(const CheckedSample&)>;

struct CheckedSimulationOptions {
  bool stop_at_first_collision = false;  // end the run after the first sample in collision
};

struct CheckedSimulationReport {
  SimulationSummary simulation;  // the integrator's summary (steps taken, energies, tensions)
  int samples = 0;               // samples seen (steps + 1 unless stopped)
  bool checked = false;          // a stage was given; the rest is meaningful only then
  int samples_in_collision = 0;
  int first_collision = -1;  // sample index, -1 if none
  double first_collision_t_s = std::numeric_limits<double>::quiet_NaN();
  ContactPair first_collision_pair;
  double min_clearance_m = std::numeric_limits<double>::infinity();
  int min_clearance_sample = -1;
  double min_clearance_t_s = std::numeric_limits<double>::quiet_NaN();
  ContactPair min_clearance_pair;
  double min_stage_clearance_m = std::numeric_limits<double>::infinity();
  int min_stage_clearance_sample = -1;
  ContactPair min_stage_clearance_pair;
  bool stopped_at_collision = false;  // options.stop_at_first_collision ended it
  bool stopped_by_caller = false;     // the callback ended it
};

// Runs `simulate` (models/simulation.hpp) and, when `checker` is given, checks every sample
// (the model of the checker must be `model`).  Throws what simulate throws: SimulationError on
// a failed step, FieldError on bad options.
CheckedSimulationReport simulateChecked(const ModelPtr& model, const InputSchedule& inputs,
                                        const SimulationOptions& options, CollisionChecker* checker,
                                        const CheckedSimulationOptions& check_options = {},
                                        const CheckedSampleFn& on_sample = {});

}  // namespace marionette

#pragma GCC visibility pop
