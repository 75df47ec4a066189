// SPDX-License-Identifier: BSD-3-Clause
// What a performance source that cannot be read throws: "file:line: field: problem" (a
// SourceError), the line 0 when the problem is not on one line (a point no frame has).
#pragma once

#include <cstddef>

#include "marionette/models/source_error.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

class PerformanceFileError : public SourceError {
 public:
  using SourceError::SourceError;
};

// The largest clip read (a BVH of 31 joints at 120 Hz is ~60 kB a second: 64 MB is 18 min).
constexpr std::size_t kMaxClipBytes = 64 << 20;
// The longest clip, and the longest program of clips joined, blends included (s): a longer
// recording is cut (from..to) or sped up to a performance's at most 600 s.
constexpr double kMaxClip_s = 3600.0;
// The most numbers a clip's tracks, or the clips joined, may hold (frames x columns; a BVH's
// channels and retargeted points): 240 MB, the 64 MB BVH above with room to spare.  Checked
// before they are built, so that a few bytes (a BVH of 0 channels and 10^7 frames) cannot ask
// for gigabytes.
constexpr double kMaxClipValues = 3e7;

}  // namespace marionette

#pragma GCC visibility pop
