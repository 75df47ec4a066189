// SPDX-License-Identifier: BSD-3-Clause
// The rig motion the benchmarks use: smooth, repeatable, every input moving.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "marionette/models/simulation.hpp"

namespace marionette {

// The median of a benchmark's rounds (the upper one of an even count; 0 for none).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// Input i oscillates at 0.3 + 0.07 i Hz with an amplitude by kind (angle 0.08 rad, rig
// translation 3 cm, winch 2 cm; all times amplitude_scale), enveloped by sin^2 over move_s so it
// starts and stops smoothly, then holds until total_s.  Values are kept in the actuator ranges.
inline InputSchedule oscillatingInputs(const Model& m, double move_s, double total_s, double dt,
                                       double amplitude_scale = 1.0) {
  InputSchedule s = InputSchedule::constant(m);
  const int n = static_cast<int>(std::ceil(total_s / dt)) + 1;
  s.times_s.resize(n);
  s.values.resize(n, m.nk());
  std::vector<double> amp(m.nk(), 0.02 * amplitude_scale);
  for (const Frame& f : m.frames)
    if (f.variable >= m.nd())
      amp[f.variable - m.nd()] = (f.type == JointType::Rotate ? 0.08 : 0.03) * amplitude_scale;
  for (int r = 0; r < n; ++r) {
    const double t = r * dt;
    s.times_s[r] = t;
    const double env = t < move_s ? std::pow(std::sin(M_PI * t / move_s), 2) : 0.0;
    for (int i = 0; i < m.nk(); ++i) {
      const KinematicVariable& k = m.kinematic[i];
      const double v = k.default_value + env * amp[i] * std::sin(2 * M_PI * (0.3 + 0.07 * i) * t);
      s.values(r, i) = std::min(k.upper, std::max(k.lower, v));
    }
  }
  return s;
}

}  // namespace marionette
