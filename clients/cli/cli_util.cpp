// SPDX-License-Identifier: BSD-3-Clause
// Small helpers shared by the CLI's commands.
#include "cli_util.hpp"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "marionette/search/plugin.hpp"

namespace marionette::cli {

Args parseArgs(int argc, char** argv, int first, const std::vector<std::string>& value_flags,
               const std::vector<std::string>& switch_flags) {
  Args a;
  for (int i = first; i < argc; ++i) {
    const std::string arg = argv[i];
    auto has = [](const std::vector<std::string>& v, const std::string& s) {
      for (const auto& x : v)
        if (x == s) return true;
      return false;
    };
    if (has(switch_flags, arg)) {
      a.switches[arg] = true;
    } else if (has(value_flags, arg)) {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      a.values[arg] = argv[i + 1];
      a.all[arg].push_back(argv[++i]);
    } else {
      throw std::invalid_argument("unknown argument '" + arg + "'");
    }
  }
  return a;
}

std::string takePositional(int argc, char** argv, std::vector<char*>& rest) {
  rest.assign(argv, argv + argc);
  if (argc <= 2 || std::string(argv[2]).rfind("--", 0) == 0) return "";
  rest.erase(rest.begin() + 2);
  return argv[2];
}

double parseNumber(const std::string& flag, const std::string& text) {
  double x;
  if (!parseFiniteNumber(text, x))
    throw std::invalid_argument(flag + ": not a number: '" + text + "'");
  return x;
}

double wholeNumber(const std::string& flag, const std::string& text, double lo, double hi) {
  const double v = parseNumber(flag, text);
  if (v < lo || v > hi || v != std::floor(v))
    throw std::invalid_argument(flag + ": expected a whole number in [" + formatted("%g", lo) +
                                ", " + formatted("%g", hi) + "], got '" + text + "'");
  return v;
}

void loadPlugins(const Args& args) {
  if (!args.all.count("--plugin")) return;
  for (const std::string& path : args.all.at("--plugin")) try {
      loadPlannerPlugin(path);
    } catch (const FieldError& e) {
      throw std::invalid_argument("--plugin: " + e.problem());
    }
}

std::string readFlagFile(const std::string& flag, const std::string& path, std::size_t max_bytes) {
  try {
    return readTextFile(path, max_bytes);
  } catch (const FileError& e) {
    throw std::invalid_argument(flag + ": " + e.what());
  }
}

std::string readFlagToken(const std::string& flag, const std::string& path) {
  try {
    return readFirstLine(path);
  } catch (const FileError& e) {
    throw std::invalid_argument(flag + ": " + e.what());
  }
}

std::string flagMessage(const FieldError& e) {
  static const std::map<std::string, std::string> kFlags = {
      {"start", "--start"},
      {"start_inputs", "--start"},
      {"goal", "--goal"},
      {"dt_s", "--dt"},
      {"duration_s", "--duration"},
      {"damping_scale", "--damping-scale"},
      {"integrator", "--integrator"},
      {"options.planner", "--planner"},
      {"options.time_limit_s", "--time-limit"},
      {"options.max_propagations", "--max-propagations"},
      {"options.output_rate_hz", "--rate"},
      {"options.rate_hz", "--rate"},  // a performance's
      {"rate_hz", "--rate"},          // verifyMotion's (optimize)
      {"options.step_s", "--step"},
      {"options.parameters", "--param"},
      {"options.roadmap.vertices", "--roadmap-vertices"},
      {"options.poses", "--poses"},    // reach's
      {"options.swings", "--swings"},
      {"trace_points", "--points"},
      {"width_px", "--size"},
      {"chromium", "--chromium"},
      {"model", "--model"},
      {"rig", "--rig"},
      {"log", "--log"},
      {"hold", "--hold"},
      {"rate_scale", "--rate-scale"},
      {"send_rate_hz", "--send-rate"},
      {"optimization.settle_s", "--settle"},
      {"optimization.margin_m", "--margin"},
      {"optimization.time_limit_s", "--optimize-time"},
      {"optimization.max_iterations", "--optimize-iterations"},
      {"optimization.method", "--optimizer"},
      {"optimization.weights", "--weight"},
      {"from_s", "--from"},
      {"to_s", "--to"},
      {"speed", "--speed"},
      {"loop", "--loop"},
      {"disable", "--disable"},
      {"blend_s", "--blend"},
      {"options.margin_m", "--margin"},
      {"options.tolerance_m", "--tolerance"},
      {"options.reach_tolerance_m", "--reach-tolerance"},
      {"options.key_rate_hz", "--key-rate"},
      {"options.knots_per_s", "--knots"},
      {"options.settle_s", "--settle"},
      {"options.disable", "--disable"},
      {"options.calm_weight", "--calm"},
      {"options.free_points", "--free"},
  };
  for (auto it = kFlags.rbegin(); it != kFlags.rend(); ++it)  // the longest prefix first
    if (fieldWithin(e.field(), it->first)) return it->second + ": " + e.problem();
  return e.what();
}

namespace {
std::atomic<bool> g_stop{false};
extern "C" void onStopSignal(int) {
  g_stop.store(true);
}
}  // namespace

std::unique_ptr<OutputFile> openOutput(const Args& a, const std::string& flag) {
  if (!a.values.count(flag)) return nullptr;
  try {
    return std::make_unique<OutputFile>(a.values.at(flag));
  } catch (const FileError& e) {
    throw std::invalid_argument(flag + ": " + e.what());
  }
}

void checkOutput(const Args& a, const std::string& flag) {
  if (!a.values.count(flag)) return;
  try {
    checkWritable(a.values.at(flag));
  } catch (const FileError& e) {
    throw std::invalid_argument(flag + ": " + e.what());
  }
}

const std::atomic<bool>* installStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = onStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return &g_stop;
}

}  // namespace marionette::cli
