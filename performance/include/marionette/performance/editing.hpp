// SPDX-License-Identifier: BSD-3-Clause
// Editing performances as Egger's performance tool did (Egger 2013, §3.3 and §5): a part of a
// clip, slower or faster, one after another, looped, and limbs left out.  Each works on target
// tracks; the step to rig commands then keeps every limit (plan_performance.hpp).  Throws
// FieldError naming the argument.
//
// Contents
//   sliceTargets        the frames from..to (s), re-based to 0.
//   scaleTime           played `speed` times as fast (0.5: twice as long).
//   joinTargets         many, each starting where the one before ended, after a smooth blend;
//                       in one pass (time and memory linear in the result).
//   concatenateTargets  two of them.
//   loopTargets         repeated, with a smooth return to its start between repetitions.
//   limbInputs          the rig inputs that move a string (a limb), or an input by its name.
#pragma once

#include <string>
#include <vector>

#include "marionette/models/model.hpp"
#include "marionette/plan/targets.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

TargetMotion sliceTargets(const TargetMotion& motion, double from_s, double to_s);
TargetMotion scaleTime(const TargetMotion& motion, double speed);
// `blend_s` after a part's last frame the next one's first frame begins; in between the targets
// move from one to the other along a smoothstep (3 s^2 - 2 s^3), frames every 1/30 s (a target
// only one of the two has is none there).  Points and variables are the union of all parts (NaN
// where one has none).  Polls the thread's CancelScope (models/cancel.hpp).
TargetMotion joinTargets(const std::vector<const TargetMotion*>& parts, double blend_s = 1.0);
TargetMotion concatenateTargets(const TargetMotion& first, const TargetMotion& second,
                                double blend_s = 1.0);
TargetMotion loopTargets(const TargetMotion& motion, int times, double return_s = 1.0);

// A string's name: the kinematic variables its rig point hangs from and its length's; an input's
// name: that input.  Empty if neither.
std::vector<int> limbInputs(const Model& model, const std::string& name);

}  // namespace marionette

#pragma GCC visibility pop
