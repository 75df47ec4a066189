// SPDX-License-Identifier: BSD-3-Clause
// The optimizer's flags (`plan`, `optimize`, `bench planners`; all but `optimize` take --raw for
// the plan as found): --margin M, --settle S, --optimize-time S, --optimize-iterations N,
// --optimizer transcription|interior-point|ipopt, --weight NAME=V (repeated); and what the
// optimization did, in a few lines.
#pragma once

#include <ostream>

#include "cli_util.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"

namespace marionette::cli {

// Throws std::invalid_argument naming the flag.
OptimizationOptions parseOptimizationOptions(const Args& args);
// False with --raw (the plan as found), which takes none of those flags nor --optimize (the
// default, still accepted): std::invalid_argument naming the flag.
bool optimizeUnlessRaw(const Args& args);
// Each --weight NAME=V into `weights` (also `perform`'s); std::invalid_argument naming the flag.
void parseWeightFlags(const Args& args, OptimizationWeights& weights);
void printOptimization(const OptimizationReport& report, std::ostream& os);

}  // namespace marionette::cli
