// What a performance source that cannot be read throws: "file:line: field: problem" (a
// SourceError), the line 0 when the problem is not on one line (a point no frame has).
#pragma once

#include <cstddef>

#include "marionette/models/source_error.hpp"

namespace marionette {

class PerformanceFileError : public SourceError {
 public:
  using SourceError::SourceError;
};

// The largest clip read (a BVH of 31 joints at 120 Hz is ~60 kB a second: 64 MB is 18 min).
constexpr std::size_t kMaxClipBytes = 64 << 20;

}  // namespace marionette
