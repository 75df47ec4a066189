// SPDX-License-Identifier: BSD-3-Clause
// Internal: what makes a search a function of its request's seed.
//
// Every sampler a planner allocates gets the next number of the request's SeedSequence.  OMPL's
// seed generator is process-wide: planners take their RNG seeds from it when they are
// constructed and set up, and every sampler draws one as it is made (its ompl::RNG member, then
// re-seeded locally).  Seeding it and constructing under one lock, and making samplers under it
// too (they are made during searches, in other threads), makes that part a function of the
// request's seed even with searches running in other threads.  Recursive: a planner's setup,
// under the lock, makes samplers.
#pragma once

#include <cstdint>
#include <mutex>

namespace marionette::detail {

// splitmix64 of (base, counter): distinct, well-mixed, never 0.
struct SeedSequence {
  unsigned long base = 1;
  unsigned long next = 0;
  std::uint_fast32_t operator()() {
    unsigned long long z = base * 0x9E3779B97F4A7C15ull + (++next) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<std::uint_fast32_t>(z % 4294967291ull) + 1;
  }
};

std::recursive_mutex& omplSeedMutex();

// OMPL's console output off, once per process (the library reports through its results).
void quietOmpl();

}  // namespace marionette::detail
