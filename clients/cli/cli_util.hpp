// SPDX-License-Identifier: BSD-3-Clause
// Small helpers shared by the CLI's commands: argument parsing, numbers, formatting.  JSON text,
// atomic file writes and name lists come from common (marionette/common/*.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "marionette/common/files.hpp"
#include "marionette/common/json_text.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"

namespace marionette::cli {

// --flag value pairs and bare --switches; anything else is an error naming it.  `values` keeps
// the last value of a flag, `all` every value of a repeatable one.
struct Args {
  std::map<std::string, std::string> values;
  std::map<std::string, std::vector<std::string>> all;
  std::map<std::string, bool> switches;
  bool has(const std::string& flag) const { return values.count(flag) || switches.count(flag); }
};
Args parseArgs(int argc, char** argv, int first, const std::vector<std::string>& value_flags,
               const std::vector<std::string>& switch_flags);
// A command's one positional argument (`render PLAN.json`, `optimize PLAN.json`): the first
// argument after the command when it is not a flag, or "".  `rest` gets argv without it.
std::string takePositional(int argc, char** argv, std::vector<char*>& rest);

// A finite number, or std::invalid_argument naming the flag.
double parseNumber(const std::string& flag, const std::string& text);
// A whole number within [lo, hi], or std::invalid_argument naming the flag.
double wholeNumber(const std::string& flag, const std::string& text, double lo, double hi);

// --plugin LIB.so (repeatable): planners registered from shared libraries (search/plugin.hpp).
void loadPlugins(const Args& args);

// A file named by a flag: its text, or its first line (a token); std::invalid_argument naming
// the flag and the path.
std::string readFlagFile(const std::string& flag, const std::string& path,
                         std::size_t max_bytes = std::numeric_limits<std::size_t>::max());
std::string readFlagToken(const std::string& flag, const std::string& path);

// The output a flag names, opened now (OutputFile: before the work that fills it), or nullptr
// when the flag is not given; std::invalid_argument naming the flag when it cannot be.
std::unique_ptr<OutputFile> openOutput(const Args& a, const std::string& flag);
// checkWritable for the file a flag names, if given; std::invalid_argument naming the flag.
void checkOutput(const Args& a, const std::string& flag);

// A library's FieldError in the CLI's words: the flag that gave the field, and the problem
// ("--goal: 'x' is not a point of 'arm3d' (...)").
std::string flagMessage(const FieldError& error);

// SIGINT and SIGTERM set the flag returned (no SA_RESTART: a deadline's sleep wakes at once), so
// that a command that moves a rig stops it safely.
const std::atomic<bool>* installStopHandlers();

}  // namespace marionette::cli
