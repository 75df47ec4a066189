// SPDX-License-Identifier: BSD-3-Clause
// A performance's program as a puppeteer writes it, in one place for every front end (the CLI's
// flags, the service's PerformRequest): clips in playing order, each read from its text, then
// cut, sped up or slowed down, looped, and limbs left out (Egger 2013, §3.3).
//
// Contents
//   ClipFormat / Clip      one source's text, its format and, for BVH, its retarget map.
//   PerformanceEdits       blend, from..to, speed, loop, the limbs disabled.
//   PerformanceProgram     the target tracks and the inputs to hold.
//   assemblePerformance    clips read and concatenated, then the edits, in that order.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "marionette/models/model.hpp"
#include "marionette/plan/targets.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

enum class ClipFormat { Markers, Pcr, Bvh, Keyframes };
// "markers", "pcr", "bvh", "keyframes".
const char* toString(ClipFormat format);

struct Clip {
  ClipFormat format = ClipFormat::Markers;
  std::string text;
  std::string source;    // its name in errors ("clips/walk.bvh", "clips[0].text"); a plan keeps
                         // the file's name ("walk.bvh"), not where it was read from
  std::string map_text;  // BVH: the retarget map's YAML; empty = the model's built-in map
  std::string map_source;
};

struct PerformanceEdits {
  double blend_s = 1.0;  // between clips, and a loop's return to its start
  double from_s = 0.0;   // of the concatenated clips
  double to_s = std::numeric_limits<double>::infinity();
  double speed = 1.0;
  int loop = 1;          // times played
  // Strings (limbs) or inputs by name: their inputs hold, a string's puppet point loses its
  // target.
  std::vector<std::string> disable;
};

struct PerformanceProgram {
  TargetMotion targets;
  std::vector<int> disable;  // inputs held at the start's values (kinematic variable indices)
};

// Throws PerformanceFileError for a clip's or a map's text (its source, line and field),
// FieldError for the edits ("blend_s", "from_s", "speed", "loop", "disable[1]", ...), for clips
// that together exceed kMaxClip_s or kMaxClipValues ("clips", before they are joined) and for a
// BVH clip of a model without a built-in map ("clips[0].map"); PlanCancelled when the thread's
// CancelScope says stop (between clips, and while they are joined).
PerformanceProgram assemblePerformance(const ModelPtr& model, const std::vector<Clip>& clips,
                                       const PerformanceEdits& edits);

}  // namespace marionette

#pragma GCC visibility pop
