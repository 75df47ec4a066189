// SPDX-License-Identifier: BSD-3-Clause
// The rest-pose roadmap's options (the roadmap itself: roadmap.hpp).
//
// Contents
//   RoadmapOptions        sizes, edge motion and settling criteria; describe(), check().
//   kMaxRoadmapVertices   the most vertices a roadmap may ask for.
#pragma once

#include <cstddef>
#include <string>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct RoadmapOptions {
  int vertices = 120;                // rest poses kept in the learning phase
  int neighbours = 10;               // edges to the nearest vertices (in time at full speed)
  double build_time_limit_s = 60.0;  // learning phase budget
  unsigned long seed = 1;            // learning-phase samples
  double step_s = 0.02;              // integrator step of edge simulations (s)
  double slowdown = 1.5;             // edges move at the limits divided by this
  double settle_max_s = 6.0;         // the swing must settle within this after an edge's move
  double settle_tolerance = 0.06;    // m: every named point this near its rest position = settled
  double settle_energy_J = 2e-4;     // and puppet kinetic energy below this (J)
  std::string describe() const;      // "vertices=120 neighbours=10 ...": every option, exactly
  // FieldError("options.roadmap.<member>", ...) for a value out of its range (a NaN step made a
  // 5 s request run for 19 s to 6 GB); build and load check first.
  void check() const;
};
constexpr std::size_t kMaxRoadmapVertices = 100000;

}  // namespace marionette

#pragma GCC visibility pop
