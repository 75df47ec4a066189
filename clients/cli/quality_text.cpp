// SPDX-License-Identifier: BSD-3-Clause
#include "quality_text.hpp"

#include "marionette/common/text.hpp"

namespace marionette::cli {

void printQuality(const Plan& plan, std::ostream& os, const StageThresholds& limits,
                  bool with_outcome) {
  const PlanQuality& q = plan.quality;
  if (!q.measured) return;
  os << formatted(
            "  quality: input jerk rms %.3g /s^3; %d string catches, %d snaps; peak tension "
            "x%.3g (%s); after a %g s hold: joint speed rms %.3g, kinetic energy %.3g J",
            q.input_jerk_rms_overall, q.string_catches, q.snaps, q.peak_tension_ratio,
            q.peak_tension_string.empty() ? "-" : q.peak_tension_string.c_str(), q.settle_s,
            q.residual_joint_speed_rms, q.residual_kinetic_energy_J)
     << '\n';
  std::vector<std::string> shortfalls = stageShortfalls(plan, limits);
  if (!with_outcome && !shortfalls.empty() && shortfalls.front() == toString(plan.outcome))
    shortfalls.erase(shortfalls.begin());
  os << (shortfalls.empty() ? std::string("  stage-worthy")
                            : "  not stage-worthy: " + joinNames(shortfalls, "; "))
     << '\n';
}

}  // namespace marionette::cli
