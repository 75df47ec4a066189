// SPDX-License-Identifier: BSD-3-Clause
// `execute --dry-run` on a plan's stage: the stream the rig would be sent (ramp-in, settle,
// play), re-simulated from the plan's start with the puppet touching what a plan may touch
// (problemCollisionOptions: the floor, its own links), every sample checked, and its named points
// against the plan's predicted motion (a plan played at another speed moves otherwise: its
// dynamics differ).  Nothing moves.
//
// Contents
//   Rehearsal   what the puppet did: the stage's report, the contact pairs that bore load.
//   rehearse()  runs it.
#pragma once

#include <string>
#include <vector>

#include "marionette/environments/checked_simulation.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/executor/executor.hpp"

namespace marionette::cli {

struct Rehearsal {
  CheckedSimulationReport report;    // first collision, minimum clearances (stage, anything)
  std::vector<std::string> touched;  // contact pairs ("floor/foot_l") that bore load, in order
  double duration_s = 0.0;           // of the stream re-simulated
  // With the plan's predicted states: over the play, the named points' greatest distance from
  // where the plan predicts them at the same point of the plan (t rate_scale into it: the same
  // show played faster or slower), which point and when (s into the plan).
  double deviation_m = 0.0;
  std::string deviation_point;
  double deviation_at_s = 0.0;
};

// The stream's rows at stream.rate_hz from the plan's first predicted pose (the rest pose of the
// first row when the plan has none), at rest, on `scene`; rate_scale: what the stream was built
// with.  Throws SimulationError when a step fails, FieldError for a start with no rest pose.
Rehearsal rehearse(const executor::Playback& plan, const executor::Stream& stream,
                   const ScenePtr& scene, double rate_scale = 1.0);

}  // namespace marionette::cli
