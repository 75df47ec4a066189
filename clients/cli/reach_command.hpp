// SPDX-License-Identifier: BSD-3-Clause
// marionette reach: where a model's named points can be held still or swung to
// (docs/performance.md, "Reach").
//   marionette reach --model M [--scene S] --point P[,Q...] [--poses N] [--swings N]
//       [--out reach.html] [--json reach.json]
#pragma once

namespace marionette::cli {

// Exit status: 0 done (the extents printed), 2 bad arguments or files.
int cmdReach(int argc, char** argv);

}  // namespace marionette::cli
