// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/plan/plan.hpp"

#include <cmath>
#include <utility>

namespace marionette {

const char* toString(PlanOutcome outcome) {
  switch (outcome) {
    case PlanOutcome::Exact: return "exact";
    case PlanOutcome::Approximate: return "approximate";
    case PlanOutcome::NotFound: return "not-found";
  }
  return "?";
}

InputSchedule planInputs(const Plan& plan) {
  InputSchedule schedule;
  if (plan.samples() > 0) schedule.defaults = plan.inputs.row(0).transpose();
  schedule.values = plan.inputs;
  for (int i = 0; i < plan.samples(); ++i) schedule.times_s.push_back(i / plan.rate_hz);
  return schedule;
}

void requireFiniteNumbers(const Plan& plan) {
  // The first row of `m` with a value that is not finite (or, with nan_only, NaN), else -1.
  auto badRow = [](const auto& m, bool nan_only) -> long {
    for (Eigen::Index r = 0; r < m.rows(); ++r)
      for (Eigen::Index c = 0; c < m.cols(); ++c)
        if (nan_only ? std::isnan(m(r, c)) : !std::isfinite(m(r, c))) return r;
    return -1;
  };
  const std::pair<const char*, long> rows[] = {
      {"inputs", badRow(plan.inputs, false)},
      {"states", badRow(plan.predicted.states, false)},
      {"tensions", badRow(plan.predicted.tensions_N, false)},
      {"named points", badRow(plan.predicted.points_m, false)},
      {"contact forces", std::max(badRow(plan.predicted.contact_normal_N, false),
                                  badRow(plan.predicted.contact_friction_N, false))},
      {"goal distance", badRow(plan.predicted.goal_distance, true)},
      // No obstacle in reach is an infinite clearance, never a NaN one.
      {"clearance", badRow(plan.predicted.clearance_m, true)},
      {"stage clearance", badRow(plan.predicted.stage_clearance_m, true)}};
  for (const auto& [what, row] : rows)
    if (row >= 0)
      throw SimulationError(static_cast<int>(row), row / plan.rate_hz,
                            std::string("the plan's ") + what +
                                " are not finite there (a numerical failure); it is not returned");
  for (std::size_t k = 0; k < plan.gains.K.size(); ++k)
    if (!plan.gains.K[k].allFinite())
      throw SimulationError(static_cast<int>(k), k / plan.rate_hz,
                            "the plan's feedback gains are not finite there; it is not returned");
}

SimulationOptions planSimulation(const Plan& plan, double hold_s) {
  SimulationOptions so;
  so.dt_s = 1.0 / plan.rate_hz;
  const long hold_steps = std::lround(hold_s * plan.rate_hz);
  so.duration_s = (plan.samples() - 1 + hold_steps) * so.dt_s;
  return so;
}

}  // namespace marionette
