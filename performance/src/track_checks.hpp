// SPDX-License-Identifier: BSD-3-Clause
// Checks every source applies to the tracks it read.
#pragma once

#include <functional>
#include <string>

#include "marionette/models/model.hpp"
#include "marionette/plan/targets.hpp"

namespace marionette::detail {

// Times finite, strictly increasing, at least two frames and at most 1 h; every point with a
// value at some frame; no position farther than 100 m.  `line_of(frame)` names the line.
void checkTracks(const TargetMotion& motion, const std::function<int(int)>& line_of);

// " (its points: a, b, c)" for messages.
std::string knownPoints(const Model& model);

}  // namespace marionette::detail
