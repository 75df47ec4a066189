#include "marionette/plan/plan.hpp"

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

SimulationOptions planSimulation(const Plan& plan, double hold_s) {
  SimulationOptions so;
  so.dt_s = 1.0 / plan.rate_hz;
  const long hold_steps = std::lround(hold_s * plan.rate_hz);
  so.duration_s = (plan.samples() - 1 + hold_steps) * so.dt_s;
  return so;
}

}  // namespace marionette
