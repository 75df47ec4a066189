// SPDX-License-Identifier: BSD-3-Clause
// Internal to the benchmark library: a problem's goal text with "NAME=REST+0.3" resolved to that
// joint's value at the problem's start plus the offset.
#pragma once

#include <string>

#include "marionette/benchmark/benchmark.hpp"

namespace marionette {

std::string resolveRestOffsets(const ModelPtr& model, const BenchmarkProblem& problem);

}  // namespace marionette
