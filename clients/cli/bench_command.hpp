// SPDX-License-Identifier: BSD-3-Clause
// marionette bench planners ...: every planner on the benchmark problems (benchmark/), OMPL logs
// and a summary.
#pragma once

namespace marionette::cli {

// Exit status: 0 when every run completed (whatever the planners' success), 2 on bad arguments.
int cmdBenchPlanners(int argc, char** argv);

}  // namespace marionette::cli
