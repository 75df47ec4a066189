// The planning commands of the CLI.
//   marionette plan ...            one plan, written as JSON (and CSV inputs)
#pragma once

namespace marionette::cli {

// Exit status: 0 solved exactly, 4 only approximately, 5 nothing found, 2 bad arguments.
int cmdPlan(int argc, char** argv);

}  // namespace marionette::cli
