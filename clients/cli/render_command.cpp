// SPDX-License-Identifier: BSD-3-Clause
#include "render_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli_util.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/plan/plan_file.hpp"
#include "marionette/viewer/snapshot.hpp"
#include "marionette/viewer/view.hpp"

namespace marionette::cli {
namespace {

using namespace marionette::viewer;

// "1280x720" -> {1280, 720}.
std::pair<int, int> parseSize(const std::string& text) {
  int w = 0, h = 0;
  char x = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &w, &x, &h, &extra) != 3 || (x != 'x' && x != 'X'))
    throw std::invalid_argument("--size: expected WIDTHxHEIGHT in pixels, e.g. 1280x720 (got '" +
                                text + "')");
  return {w, h};
}

// `--compare B.json`: the plan drawn as a ghost beside `shown`'s (same model, refused otherwise
// by motionOfPlan naming the file and field), in the shown plan's scene.  Where the two names
// would read the same in the legends, both are their paths.
Motion comparedMotion(const std::string& path, const Model& model, const ScenePtr& scene,
                      const std::string& shown_path, Motion& shown) {
  const Plan plan = readPlanFile(path);
  Motion m = motionOfPlan(plan, path, model);
  if (!plan.scene.empty() && (!scene || plan.scene != scene->name))
    m.problems.push_back("planned in '" + plan.scene + "', shown in '" +
                         (scene ? scene->name : "no scene") + "'");
  if (m.name == shown.name) {
    m.name = path;
    shown.name = shown_path;
  }
  return m;
}

}  // namespace

int cmdRender(int argc, char** argv) {
  // The plan is the one positional argument.
  std::vector<char*> rest;
  const std::string plan_path = takePositional(argc, argv, rest);
  const Args a =
      parseArgs(static_cast<int>(rest.size()), rest.data(), 2,
                {"--model", "--scene", "--inputs", "--dt", "--duration", "--out", "--png", "--at",
                 "--size", "--points", "--chromium", "--compare", "--camera", "--fit"},
                {});
  const bool comparing = a.values.count("--compare") > 0;
  if (comparing && a.values.count("--inputs"))
    throw std::invalid_argument("--compare: compares two plan files; not with --inputs");
  if (comparing && plan_path.empty())
    throw std::invalid_argument(
        "--compare: give the plan to compare it with first (marionette render A.json "
        "--compare B.json)");
  if (!a.values.count("--out") && !a.values.count("--png"))
    throw std::invalid_argument("nothing to write: give --out FILE.html and/or --png FILE.png");
  if (plan_path.empty() && !a.values.count("--model"))
    throw std::invalid_argument("give a plan file (marionette render plan.json ...) or --model");
  if (!plan_path.empty() && a.values.count("--inputs"))
    throw std::invalid_argument("--inputs: a plan has its own inputs; give one or the other");
  for (const char* flag : {"--dt", "--duration"})
    if (a.values.count(flag) && !a.values.count("--inputs"))
      throw std::invalid_argument(std::string(flag) + " applies to --inputs only");

  // What to show.
  ModelPtr model = a.values.count("--model") ? loadModel(a.values.at("--model")) : nullptr;
  ScenePtr scene;
  Motion motion, compared;
  if (!plan_path.empty()) {
    const Plan plan = readPlanFile(plan_path);
    if (!model) {
      try {
        model = loadModel(plan.model);
      } catch (const std::exception& e) {
        throw std::invalid_argument(plan_path + ": model: '" + plan.model + "': " + e.what() +
                                    " (give the model file with --model)");
      }
    }
    motion = motionOfPlan(plan, plan_path, *model);
    if (a.values.count("--scene")) {
      scene = loadScene(a.values.at("--scene"));
    } else if (!plan.scene.empty()) {
      try {
        scene = loadScene(plan.scene);
      } catch (const std::exception& e) {
        throw std::invalid_argument(plan_path + ": scene: '" + plan.scene + "': " + e.what() +
                                    " (give the scene file with --scene)");
      }
    }
    if (comparing)
      compared = comparedMotion(a.values.at("--compare"), *model, scene, plan_path, motion);
  } else {
    if (a.values.count("--scene")) scene = loadScene(a.values.at("--scene"));
    if (a.values.count("--inputs")) {
      const std::string path = a.values.at("--inputs");
      const InputSchedule inputs = InputSchedule::fromCsvFile(*model, path);
      const double dt = a.values.count("--dt") ? parseNumber("--dt", a.values.at("--dt")) : 0.02;
      // By default one second past the last row, to see the puppet settle.
      const double duration = a.values.count("--duration")
                                  ? parseNumber("--duration", a.values.at("--duration"))
                                  : (inputs.times_s.empty() ? 0.0 : inputs.times_s.back()) + 1.0;
      try {
        motion = motionOfInputs(model, inputs, path, dt, duration);
      } catch (const SimulationError& e) {
        std::cerr << "marionette render: the simulation of " << path << " failed at " << e.what()
                  << "\n";
        return 1;
      }
    } else {
      motion = motionAtRest(model);
    }
  }
  // The timeline spans the longer motion.
  double duration = (motion.q.rows() - 1) / motion.rate_hz;
  ViewOptions options;
  if (comparing) {
    options.compare = &compared;
    duration = std::max(duration, (compared.q.rows() - 1) / compared.rate_hz);
  }
  if (a.values.count("--points")) options.trace_points = splitCommas(a.values.at("--points"));
  try {
    if (a.values.count("--camera"))
      options.camera_direction = parseCameraDirection(a.values.at("--camera"));
    if (a.values.count("--fit")) options.fit = parseFit(a.values.at("--fit"));
  } catch (const FieldError& e) {
    throw std::invalid_argument("--" + e.field() + ": " + e.problem());
  }
  const bool at_given = a.values.count("--at") > 0;
  if (at_given) {
    options.at_s = parseNumber("--at", a.values.at("--at"));
    if (options.at_s < 0 || options.at_s > duration + 1e-9)
      throw std::invalid_argument(
          formatted("--at: %g s is outside the motion (0 .. %.3f s)", options.at_s, duration));
  }

  // A still's options are checked before anything is written.
  SnapshotOptions shot;
  if (a.values.count("--png")) {
    if (a.values.count("--size"))
      std::tie(shot.width_px, shot.height_px) = parseSize(a.values.at("--size"));
    // A plan's still shows the moment it reaches its goal (else its end) unless --at says
    // otherwise.
    shot.at_s = at_given                  ? options.at_s
                : motion.goal_sample >= 0 ? motion.goal_sample / motion.rate_hz
                : plan_path.empty()       ? 0.0
                                          : duration;
    if (a.values.count("--chromium")) shot.chromium = a.values.at("--chromium");
    checkSnapshot(shot);
  }

  // The whole page in memory first: an error leaves no file behind.
  std::ostringstream page;
  writeViewPage(model, scene, motion, options, page);
  const std::string html = page.str();
  auto writePage = [&](const std::string& path) {
    writeFileAtomically(path, [&](std::ostream& os) { os << html; });
  };
  if (a.values.count("--out")) {
    writePage(a.values.at("--out"));
    std::cerr << "render: wrote " << a.values.at("--out") << " (" << html.size() / 1024 << " KiB, "
              << motion.q.rows() << " samples"
              << (comparing ? " and " + std::to_string(compared.q.rows()) + " compared" : "")
              << ", " << formatted("%.2f", duration) << " s)\n";
  }
  if (a.values.count("--png")) {
    const std::string png = a.values.at("--png");
    // The browser opens a page on disk: --out's, or a temporary one.
    std::string source = a.values.count("--out") ? a.values.at("--out") : "";
    std::string temporary;
    if (source.empty()) {
      char tmpl[] = "/tmp/marionette-page-XXXXXX.html";
      const int fd = mkstemps(tmpl, 5);
      if (fd < 0) throw std::runtime_error("cannot make a temporary page");
      close(fd);
      temporary = source = tmpl;
      writePage(source);
    }
    try {
      writeSnapshot(source, png, shot);
    } catch (...) {
      if (!temporary.empty()) std::remove(temporary.c_str());
      throw;
    }
    if (!temporary.empty()) std::remove(temporary.c_str());
    std::cerr << "render: wrote " << png << " (" << shot.width_px << "x" << shot.height_px
              << ", t = " << formatted("%.2f", shot.at_s) << " s)\n";
  }
  return 0;
}

}  // namespace marionette::cli
