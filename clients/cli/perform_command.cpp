// SPDX-License-Identifier: BSD-3-Clause
#include "perform_command.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "cli_util.hpp"
#include "marionette/environments/scene.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/performance/performance_error.hpp"
#include "marionette/performance/program.hpp"
#include "marionette/plan/plan_file.hpp"
#include "marionette/performance/plan_performance.hpp"
#include "optimize_options.hpp"
#include "quality_text.hpp"

namespace marionette::cli {
namespace {

const std::vector<std::string> kSourceFlags = {"--markers", "--pcr", "--bvh", "--keyframes"};

void printTracking(const Plan& plan, std::ostream& os) {
  const TargetTracking& t = plan.performance.tracking;
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
  if (!t.variables.empty()) {
    os << "  joint and input targets (rad or m):  rms      max (at s)\n";
    for (const PointTracking& v : t.variables)
      os << formatted("    %-20s  %16.4f  %.4f (%.2f)\n", v.point.c_str(), v.rms_m, v.max_m,
                      v.max_at_s);
  }
  // The points without a target, the farthest strays first.
  std::vector<PointTracking> strays = t.untargeted;
  std::sort(strays.begin(), strays.end(),
            [](const PointTracking& a, const PointTracking& b) { return a.max_m > b.max_m; });
  if (!strays.empty()) {
    os << "  untargeted points, farthest from where they hang:";
    for (std::size_t i = 0; i < std::min<std::size_t>(strays.size(), 5); ++i)
      os << formatted("%s %s %.3f m (%.2f s)", i ? "," : "", strays[i].point.c_str(),
                      strays[i].max_m, strays[i].max_at_s);
    os << (strays.size() > 5 ? ", ...\n" : "\n");
  }
  // Retargeting into reach: how far each fitted track is from its clip, and where.
  bool fitted = false;
  for (const PointTracking& r : t.retarget) fitted = fitted || r.max_m > 0;
  if (!fitted) return;
  os << "  retargeted into reach (m from the clip):  rms      max (at s)\n";
  for (const PointTracking& r : t.retarget)
    if (r.max_m > 0)
      os << formatted("    %-20s  %21.4f  %.4f (%.2f)\n", r.point.c_str(), r.rms_m, r.max_m,
                      r.max_at_s);
  for (std::size_t i = 0; i < std::min<std::size_t>(t.retarget_spans.size(), 6); ++i) {
    const UnreachableSpan& u = t.retarget_spans[i];
    os << formatted("    %s %.2f-%.2f s, up to %.3f m: %s\n", u.point.c_str(), u.from_s, u.to_s,
                    u.worst_m, u.reason.c_str());
  }
  if (t.retarget_spans.size() > 6)
    os << "    ... (" << t.retarget_spans.size() - 6 << " more in the plan file's tracking)\n";
}

}  // namespace

int cmdPerform(int argc, char** argv) {
  const Args a = parseArgs(argc, argv, 2,
                           {"--model", "--scene", "--markers", "--pcr", "--bvh", "--map",
                            "--keyframes", "--blend", "--from", "--to", "--speed", "--loop",
                            "--disable", "--margin", "--tolerance", "--reach-tolerance", "--rate",
                            "--key-rate", "--knots", "--settle", "--time-limit", "--weight",
                            "--calm", "--free", "--out", "--inputs-csv"},
                           {"--kinematic-only", "--quiet", "--no-retarget"});
  if (!a.values.count("--model")) throw std::invalid_argument("perform needs --model NAME|FILE");
  if (!a.values.count("--out")) throw std::invalid_argument("perform needs --out perf.json");
  checkWritable(a.values.at("--out"));
  PerformanceRequest req;
  req.model = loadModel(a.values.at("--model"));
  req.scene = loadScene(a.values.count("--scene") ? a.values.at("--scene") : "empty");
  const ModelPtr& model = req.model;

  // The sources in the order given.
  std::vector<Clip> clips;
  for (int i = 2; i + 1 < argc; ++i) {
    const std::string flag = argv[i];
    const auto known = std::find(kSourceFlags.begin(), kSourceFlags.end(), flag);
    if (known == kSourceFlags.end()) continue;
    Clip clip;
    clip.format = static_cast<ClipFormat>(known - kSourceFlags.begin());
    clip.source = argv[++i];
    clip.text = readFlagFile(flag, clip.source, kMaxClipBytes);
    if (clip.format == ClipFormat::Bvh && a.values.count("--map")) {
      clip.map_source = a.values.at("--map");
      clip.map_text = readFlagFile("--map", clip.map_source, kMaxClipBytes);
    }
    clips.push_back(std::move(clip));
  }
  if (clips.empty())
    throw std::invalid_argument(
        "perform needs a source: --markers F.csv, --pcr F.pcr, --bvh F.bvh or --keyframes F.yaml");
  PerformanceEdits edits;
  auto number = [&](const char* flag, double& into) {
    if (a.values.count(flag)) into = parseNumber(flag, a.values.at(flag));
  };
  number("--blend", edits.blend_s);
  number("--from", edits.from_s);
  number("--to", edits.to_s);
  number("--speed", edits.speed);
  if (a.values.count("--loop")) {
    const double n = parseNumber("--loop", a.values.at("--loop"));
    if (n != std::floor(n) || std::abs(n) > 1e6)
      throw std::invalid_argument("--loop: expected a whole number");
    edits.loop = static_cast<int>(n);
  }
  if (a.values.count("--disable")) {
    std::stringstream list(a.values.at("--disable"));
    for (std::string limb; std::getline(list, limb, ',');) edits.disable.push_back(limb);
  }
  PerformanceProgram program;
  try {
    program = assemblePerformance(model, clips, edits);
  } catch (const FieldError& e) {
    if (e.argument() == "clips")  // a BVH clip with no map
      throw std::invalid_argument("--map: " + e.problem());
    throw;
  }
  req.targets = std::move(program.targets);
  const TargetMotion& motion = req.targets;

  PerformanceOptions& o = req.options;
  number("--margin", o.margin_m);
  number("--tolerance", o.tolerance_m);
  number("--reach-tolerance", o.reach_tolerance_m);
  o.retarget = !a.switches.count("--no-retarget");
  number("--rate", o.rate_hz);
  number("--key-rate", o.key_rate_hz);
  number("--knots", o.knots_per_s);
  number("--settle", o.settle_s);
  number("--time-limit", o.time_limit_s);
  o.dynamics = !a.switches.count("--kinematic-only");
  parseWeightFlags(a, o.weights);
  o.disable = program.disable;
  number("--calm", o.calm_weight);
  if (a.values.count("--free")) {
    std::stringstream list(a.values.at("--free"));
    for (std::string point; std::getline(list, point, ',');) o.free_points.push_back(point);
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
  std::cout << formatted("  min clearance to the stage %.4f m (t = %.2f s), to anything %.4f m\n",
                         plan.min_stage_clearance_m,
                         plan.min_stage_clearance_sample / plan.rate_hz, plan.min_clearance_m);
  printQuality(plan, std::cout, performanceStageThresholds(o), false);
  printTracking(plan, std::cout);
  return plan.outcome == PlanOutcome::Exact ? 0 : 4;
}

}  // namespace marionette::cli
