// SPDX-License-Identifier: BSD-3-Clause
// Internal (not installed): wall-clock intervals on the monotonic clock.
#pragma once

#include <chrono>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

using SteadyClock = std::chrono::steady_clock;

// Seconds from t0 to now.
inline double secondsSince(SteadyClock::time_point t0) {
  return std::chrono::duration<double>(SteadyClock::now() - t0).count();
}

}  // namespace marionette

#pragma GCC visibility pop
