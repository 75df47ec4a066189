// SPDX-License-Identifier: BSD-3-Clause
// A grid decomposition of a TreeSearchSpace for OMPL's Syclop planners (Plaku, Kavraki & Vardi,
// "Motion Planning With Dynamics by a Synergistic Combination of Layers of Planning", IEEE T-RO
// 2010): a grid over the first two coordinates of the space's projection (the goal's joints, or
// the goal point's x and y), within the bounds the states can reach.
#pragma once

#include <ompl/control/planners/syclop/Decomposition.h>

#include "marionette/search/search_space.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// `cells_per_side` x `cells_per_side` regions (>= 1; FieldError("cells_per_side") otherwise).
// A full state in a region is drawn by the space's own sampler, keeping the closest of a few
// draws (the projection of a point goal has no inverse).
ompl::control::DecompositionPtr projectionGrid(const TreeSearchSpace& space,
                                               int cells_per_side = 10);

}  // namespace marionette

#pragma GCC visibility pop
