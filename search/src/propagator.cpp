// SPDX-License-Identifier: BSD-3-Clause
#include "propagator.hpp"

#include <cmath>
#include <limits>

#include "marionette/models/cancel.hpp"
#include "state_space.hpp"

namespace marionette::detail {

Propagator::Propagator(const ompl::control::SpaceInformationPtr& si, ModelPtr model,
                       const IntegratorOptions& options, SearchCounters& counters)
    : ompl::control::StatePropagator(si),
      model_(model),
      layout_(*model),
      counters_(counters),
      vi_(std::move(model), options),
      dt_s_(options.dt_s) {
  x_ = vi_.makeState();
  rho_next_.resize(layout_.nk);
  rhodot_next_.resize(layout_.nk);
}

void Propagator::propagate(const ompl::base::State* state, const ompl::control::Control* control,
                           double duration, ompl::base::State* result) const {
  const double* in = values(state);
  double* out = values(result);
  const double* u = values(control);
  const int steps = std::max(1, int(std::lround(duration / dt_s_)));
  layout_.read(in, x_, rhodot_next_.data());
  bool ok = std::isfinite(in[0]);
  for (int s = 0; s < steps && ok; ++s) {
    rigStep(*model_, x_.rho.data(), rhodot_next_.data(), u, dt_s_, rho_next_.data(),
            rhodot_next_.data());
    ++counters_.propagations;
    try {
      ok = vi_.step(x_, rho_next_, x_) == StepStatus::Ok;
    } catch (const PlanCancelled&) {
      ok = false;  // never thrown through OMPL: the termination condition ends the search
    }
  }
  if (!ok) {
    for (int i = 0; i < layout_.dim(); ++i) out[i] = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  layout_.write(x_, rhodot_next_.data(), out);
}

}  // namespace marionette::detail
