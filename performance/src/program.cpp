#include "marionette/performance/program.hpp"

#include <cmath>

#include "marionette/common/text.hpp"
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
  PerformanceProgram out;
  TargetMotion& motion = out.targets;
  motion = readClip(model, clips.front(), 0);
  for (std::size_t i = 1; i < clips.size(); ++i)
    motion = concatenateTargets(motion, readClip(model, clips[i], i), edits.blend_s);
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
    out.held_inputs.insert(out.held_inputs.end(), inputs.begin(), inputs.end());
    if (const int s = model->stringIndex(limb); s >= 0) dropTargetsOf(*model, s, motion);
  }
  return out;
}

}  // namespace marionette
