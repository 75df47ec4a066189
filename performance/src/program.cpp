// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/performance/program.hpp"

#include <cmath>
#include <filesystem>
#include <set>

#include "marionette/common/text.hpp"
#include "marionette/models/cancel.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/performance/editing.hpp"
#include "marionette/performance/sources.hpp"

namespace marionette {

const char* toString(ClipFormat format) {
  switch (format) {
    case ClipFormat::Markers: return "markers";
    case ClipFormat::Pcr: return "pcr";
    case ClipFormat::Bvh: return "bvh";
    case ClipFormat::Keyframes: return "keyframes";
  }
  return "?";
}

namespace {

constexpr double kMaxLoopedFrames = 2e6;

TargetMotion readClip(const ModelPtr& model, const Clip& clip, std::size_t index) {
  switch (clip.format) {
    case ClipFormat::Markers: return readMarkerCsv(model, clip.text, clip.source);
    case ClipFormat::Pcr: return readPcr(model, clip.text, clip.source);
    case ClipFormat::Keyframes: return readKeyframes(model, clip.text, clip.source);
    case ClipFormat::Bvh: break;
  }
  std::optional<RetargetMap> map;
  if (!clip.map_text.empty())
    map = parseRetargetMap(clip.map_text, clip.map_source);
  else
    map = builtinRetargetMap(model->name);
  if (!map) {
    parseBvh(clip.text, clip.source);  // the clip's own mistakes first
    throw FieldError("clips[" + std::to_string(index) + "].map",
                     "model " + model->name + " has no built-in map: give a retarget map");
  }
  return readBvhPerformance(model, clip.text, clip.source, *map);
}

// The named points a string carries: they lose their targets when its limb is disabled.
void dropTargetsOf(const Model& model, int string_index, TargetMotion& targets) {
  const String& str = model.strings[string_index];
  for (std::size_t p = 0; p < targets.points.size(); ++p) {
    const Point& point = model.points[model.pointIndex(targets.points[p])];
    if (point.frame == str.puppet_frame && point.position_m == str.puppet_point_m)
      targets.positions_m.middleCols(3 * static_cast<Eigen::Index>(p), 3).setConstant(NAN);
  }
}

}  // namespace

PerformanceProgram assemblePerformance(const ModelPtr& model, const std::vector<Clip>& clips,
                                       const PerformanceEdits& edits) {
  if (clips.empty()) throw FieldError("clips", "no clip to play");
  // The blend joins clips and a loop's repetitions; checked whether or not there are any.
  if (!(edits.blend_s > 0 && edits.blend_s <= 60))
    throw FieldError("blend_s", "must be in (0, 60] s, got " + formatNumber(edits.blend_s));
  // Each clip read (a reader bounds its own: an hour, kMaxClipValues numbers), then the program
  // they make bounded before it is built: what a request may ask for is known up front.
  std::vector<TargetMotion> read;
  read.reserve(clips.size());
  double total_s = 0.0, total_frames = 0.0;
  std::set<std::string> points, variables;  // the joined tracks' columns: the union of all
  for (std::size_t i = 0; i < clips.size(); ++i) {
    throwIfCancelled("reading clips");
    read.push_back(readClip(model, clips[i], i));
    // Its errors named the file as given; the plan keeps its name, not where it was read from.
    read.back().source = std::filesystem::path(clips[i].source).filename().string();
    const TargetMotion& m = read.back();
    total_s += m.duration_s() + (i > 0 ? edits.blend_s : 0.0);
    // Joined, a smooth clip is sampled at 30 Hz, and a blend adds frames at 30 Hz.
    total_frames +=
        (m.smooth ? std::ceil(m.duration_s() * 30.0) + 1 : m.frames()) + edits.blend_s * 30.0;
    points.insert(m.points.begin(), m.points.end());
    variables.insert(m.variables.begin(), m.variables.end());
    const double total_values =
        total_frames * static_cast<double>(3 * points.size() + variables.size());
    if (total_s > kMaxClip_s)
      throw FieldError("clips", "clips[0.." + std::to_string(i) + "] together last " +
                                    formatNumber(total_s, 6) + " s, blends included; at most " +
                                    formatNumber(kMaxClip_s) + " s");
    if (total_values > kMaxClipValues)
      throw FieldError("clips", "clips[0.." + std::to_string(i) + "] together hold " +
                                    formatNumber(total_values, 6) + " values; at most " +
                                    formatNumber(kMaxClipValues));
  }
  PerformanceProgram out;
  TargetMotion& motion = out.targets;
  if (read.size() == 1) {
    motion = std::move(read.front());
  } else {
    std::vector<const TargetMotion*> parts;
    for (const TargetMotion& m : read) parts.push_back(&m);
    motion = joinTargets(parts, edits.blend_s);
  }
  read.clear();
  if (edits.from_s != 0.0 || !std::isinf(edits.to_s))
    motion = sliceTargets(motion, edits.from_s, edits.to_s);
  if (edits.speed != 1.0) motion = scaleTime(motion, edits.speed);
  if (edits.loop != 1) {
    // Checked before the copies are made.
    if (edits.loop > 1 && (motion.duration_s() + edits.blend_s) * edits.loop > kMaxPerformance_s)
      throw FieldError("loop", std::to_string(edits.loop) + " times " +
                                   formatNumber(motion.duration_s()) + " s is longer than " +
                                   formatNumber(kMaxPerformance_s) + " s");
    if (edits.loop > 1 && static_cast<double>(motion.frames()) * edits.loop > kMaxLoopedFrames)
      throw FieldError("loop", std::to_string(edits.loop) + " times " +
                                   std::to_string(motion.frames()) + " frames is more than " +
                                   formatNumber(kMaxLoopedFrames) + " frames");
    motion = loopTargets(motion, edits.loop, edits.blend_s);
  }
  for (std::size_t i = 0; i < edits.disable.size(); ++i) {
    const std::string& limb = edits.disable[i];
    const std::vector<int> inputs = limbInputs(*model, limb);
    if (inputs.empty())
      throw FieldError("disable[" + std::to_string(i) + "]",
                       "'" + limb + "' is neither a string nor an input of " + model->name);
    out.disable.insert(out.disable.end(), inputs.begin(), inputs.end());
    if (const int s = model->stringIndex(limb); s >= 0) dropTargetsOf(*model, s, motion);
  }
  return out;
}

}  // namespace marionette
