// SPDX-License-Identifier: BSD-3-Clause
// `marionette execute`: validate a plan against the rig's limits, ramp the rig to its start,
// stream it on absolute deadlines, stop safely (clients/executor).
#pragma once

namespace marionette::cli {

int cmdExecute(int argc, char** argv);

}  // namespace marionette::cli
