// SPDX-License-Identifier: BSD-3-Clause
// Planner plugins: shared libraries that register planners when loaded, for programs that take
// planners from outside (marionette-server --plugin, marionette plan|bench --plugin).
//
// A plugin is a shared library built against the installed package (marionette::ompl_layer)
// that defines
//
//   extern "C" void marionette_register_planners();
//
// which calls registerPlanner for each of its planners (registry.hpp).  examples/cpp/
// custom_planner builds one.
#pragma once

#include <string>
#include <vector>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// The name of the function a plugin defines.
constexpr const char* kPluginEntryPoint = "marionette_register_planners";

// Loads the plugin at `path` (a regular file: a FIFO, a device or a directory is refused without
// waiting; dlopen, and it stays loaded for the process's life), calls its entry point and
// returns the names of the planners it registered, in order.  Throws FieldError ("plugin")
// naming the path when it cannot be loaded, has no entry point, registers nothing, or its entry
// point throws anything, a std::exception or not (what it registered before that stays
// registered).
std::vector<std::string> loadPlannerPlugin(const std::string& path);

}  // namespace marionette

#pragma GCC visibility pop
