#include "perform_command.hpp"

#include <iostream>
#include <sstream>

#include "cli_util.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/performance/editing.hpp"
#include "marionette/performance/sources.hpp"
#include "marionette/plan/plan_file.hpp"
#include "marionette/planner/performance.hpp"
#include "optimize_options.hpp"

namespace marionette::cli {
namespace {

const std::vector<std::string> kSourceFlags = {"--markers", "--pcr", "--bvh", "--keyframes"};

void printTracking(const Plan& plan, std::ostream& os) {
  const TargetTracking& t = plan.tracking;
  os << "  tracking (m):            rms kinematic  rms dynamic   max dynamic (at s)\n";
  for (std::size_t i = 0; i < t.kinematic.size(); ++i) {
    const PointTracking& k = t.kinematic[i];
    const PointTracking* d = i < t.dynamic.size() ? &t.dynamic[i] : nullptr;
    os << formatted("    %-20s  %12.4f  %12s  %12s\n", k.point.c_str(), k.rms_m,
                    d ? formatted("%.4f", d->rms_m).c_str() : "-",
                    d ? formatted("%.4f (%.2f)", d->max_m, d->max_at_s).c_str() : "-");
  }
  const std::size_t shown = std::min<std::size_t>(t.unreachable.size(), 12);
  if (!t.unreachable.empty())
    os << "  not followed within the tolerance (" << t.unreachable.size() << " spans):\n";
  for (std::size_t i = 0; i < shown; ++i) {
    const UnreachableSpan& u = t.unreachable[i];
    os << formatted("    %s %.2f-%.2f s, up to %.3f m: %s\n", u.point.c_str(), u.from_s, u.to_s,
                    u.worst_m, u.reason.c_str());
  }
  if (shown < t.unreachable.size())
    os << "    ... (" << t.unreachable.size() - shown << " more in the plan file's tracking)\n";
}

}  // namespace

int cmdPerform(int argc, char** argv) {
  const Args a = parseArgs(argc, argv, 2,
                           {"--model", "--scene", "--markers", "--pcr", "--bvh", "--map",
                            "--keyframes", "--blend", "--from", "--to", "--speed", "--loop",
                            "--disable", "--margin", "--tolerance", "--rate", "--key-rate",
                            "--knots", "--settle", "--time-limit", "--weight", "--out",
                            "--inputs-csv"},
                           {"--kinematic-only", "--quiet"});
  if (!a.values.count("--model")) throw std::invalid_argument("perform needs --model NAME|FILE");
  if (!a.values.count("--out")) throw std::invalid_argument("perform needs --out perf.json");
  checkWritable(a.values.at("--out"));
  PerformanceRequest req;
  req.model = loadModel(a.values.at("--model"));
  req.scene = loadScene(a.values.count("--scene") ? a.values.at("--scene") : "empty");
  const ModelPtr& model = req.model;

  // The sources in the order given.
  std::vector<TargetMotion> clips;
  for (int i = 2; i + 1 < argc; ++i) {
    const std::string flag = argv[i];
    if (std::find(kSourceFlags.begin(), kSourceFlags.end(), flag) == kSourceFlags.end()) continue;
    const std::string path = argv[++i];
    const std::string text = readFlagFile(flag, path, kMaxClipBytes);
    if (flag == "--markers") {
      clips.push_back(readMarkerCsv(model, text, path));
    } else if (flag == "--pcr") {
      clips.push_back(readPcr(model, text, path));
    } else if (flag == "--keyframes") {
      clips.push_back(readKeyframes(model, text, path));
    } else {
      std::optional<RetargetMap> map;
      if (a.values.count("--map"))
        map = parseRetargetMap(readFlagFile("--map", a.values.at("--map"), kMaxClipBytes), a.values.at("--map"));
      else
        map = builtinRetargetMap(model->name);
      if (!map) {
        parseBvh(text, path);  // the clip's own mistakes first
        throw std::invalid_argument("--bvh: model " + model->name +
                                    " has no built-in map; give one with --map MAP.yaml");
      }
      clips.push_back(readBvhPerformance(model, text, path, *map));
    }
  }
  if (clips.empty())
    throw std::invalid_argument(
        "perform needs a source: --markers F.csv, --pcr F.pcr, --bvh F.bvh or --keyframes F.yaml");
  const double blend_s = a.values.count("--blend") ? parseNumber("--blend", a.values.at("--blend"))
                                                   : 1.0;
  TargetMotion motion = clips.front();
  for (std::size_t i = 1; i < clips.size(); ++i)
    motion = concatenateTargets(motion, clips[i], blend_s);
  if (a.values.count("--from") || a.values.count("--to"))
    motion = sliceTargets(
        motion, a.values.count("--from") ? parseNumber("--from", a.values.at("--from")) : 0.0,
        a.values.count("--to") ? parseNumber("--to", a.values.at("--to")) : 1e300);
  if (a.values.count("--speed"))
    motion = scaleTime(motion, parseNumber("--speed", a.values.at("--speed")));
  if (a.values.count("--loop")) {
    const double n = parseNumber("--loop", a.values.at("--loop"));
    if (n != std::floor(n)) throw std::invalid_argument("--loop: expected a whole number");
    motion = loopTargets(motion, static_cast<int>(n), blend_s);
  }
  req.targets = motion;

  PerformanceOptions& o = req.options;
  auto number = [&](const char* flag, double& into) {
    if (a.values.count(flag)) into = parseNumber(flag, a.values.at(flag));
  };
  number("--margin", o.margin_m);
  number("--tolerance", o.tolerance_m);
  number("--rate", o.rate_hz);
  number("--key-rate", o.key_rate_hz);
  number("--knots", o.knots_per_s);
  number("--settle", o.settle_s);
  number("--time-limit", o.time_limit_s);
  o.dynamics = !a.switches.count("--kinematic-only");
  parseWeightFlags(a, o.weights);
  if (a.values.count("--disable")) {
    std::stringstream list(a.values.at("--disable"));
    std::string limb;
    while (std::getline(list, limb, ',')) {
      const std::vector<int> inputs = limbInputs(*model, limb);
      if (inputs.empty())
        throw std::invalid_argument("--disable: '" + limb + "' is neither a string nor an input of " +
                                    model->name);
      o.held_inputs.insert(o.held_inputs.end(), inputs.begin(), inputs.end());
      // The string's puppet point no longer has a target: nothing moves it.
      const int s = model->stringIndex(limb);
      if (s < 0) continue;
      for (std::size_t p = 0; p < req.targets.points.size(); ++p) {
        const Point& point = model->points[model->pointIndex(req.targets.points[p])];
        const String& str = model->strings[s];
        if (point.frame == str.puppet_frame && point.position_m == str.puppet_point_m)
          req.targets.positions_m.middleCols(3 * static_cast<int>(p), 3).setConstant(NAN);
      }
    }
  }

  const bool quiet = a.switches.count("--quiet");
  if (!quiet)
    std::cout << "performance of " << motion.source << ": " << motion.points.size()
              << " points, " << formatted("%.2f", motion.duration_s()) << " s\n";
  ProgressFn progress;
  if (!quiet)
    progress = [](const PlanProgress& p) {
      if (p.phase == "kinematic")
        std::cout << formatted("  kinematic step done (%.1f s)\n", p.elapsed_s) << std::flush;
      else if (p.iteration % 5 == 0)
        std::cout << formatted("  optimize: iteration %d, cost %.4g (%.1f s)\n", p.iteration,
                               p.cost, p.elapsed_s)
                  << std::flush;
    };
  const Plan plan = planPerformance(req, progress);
  writeFileAtomically(a.values.at("--out"), [&](std::ostream& os) { writePlanJson(plan, os); });
  if (a.values.count("--inputs-csv"))
    writeFileAtomically(a.values.at("--inputs-csv"),
                        [&](std::ostream& os) { writeInputsCsv(plan, os); });
  std::cout << "plan " << plan.model << " / " << plan.scene << " by " << plan.stats.planner << ": "
            << toString(plan.outcome) << (plan.message.empty() ? "" : " -- " + plan.message)
            << formatted(" (%.1f s)\n", plan.stats.total_time_s);
  std::cout << formatted("  min clearance to the stage %.4f m; ", plan.min_stage_clearance_m)
            << formatted("%d string catches; joint speed rms %.3g a %g s hold after the end\n",
                         plan.quality.string_catches, plan.quality.residual_joint_speed_rms,
                         plan.quality.settle_s);
  printTracking(plan, std::cout);
  return plan.outcome == PlanOutcome::Exact ? 0 : 4;
}

}  // namespace marionette::cli
