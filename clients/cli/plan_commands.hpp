// SPDX-License-Identifier: BSD-3-Clause
// The planning commands of the CLI.
//   marionette plan ...              one plan, written as JSON (and CSV inputs)
//   marionette optimize ...          a motion verified, then optimized
#pragma once

namespace marionette::cli {

// Exit status: 0 solved exactly, 4 only approximately, 5 nothing found, 2 bad arguments.
int cmdPlan(int argc, char** argv);

// marionette optimize PLAN.json | --inputs FILE.csv --model M ...: the motion verified, then
// optimized.  Exit status: 0 exact (optimized or, when it could not be improved, as given),
// 4 approximate, 5 the given motion cannot be re-simulated, 2 bad arguments.
int cmdOptimize(int argc, char** argv);

}  // namespace marionette::cli
