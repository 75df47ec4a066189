// SPDX-License-Identifier: BSD-3-Clause
// The tree search's state in one real vector: x = (q_d, p, rho, rho_dot), n = 2 n_d + 2 n_k.
//
// q_d and p are the variational integrator's State (configuration and discrete momentum), rho
// the rig's setpoints and rho_dot their rates.  The rates are part of the state because a
// control is a target rig velocity that the rig slews to at its maximum acceleration
// (rigStep): without them a new control would jump the rig's speed.  Every place that reads or
// writes such a vector goes through this layout.
#pragma once

#include <Eigen/Core>

#include "marionette/models/integrator.hpp"
#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct StateLayout {
  int nd = 0, nk = 0;

  StateLayout() = default;
  explicit StateLayout(const Model& model) : nd(model.nd()), nk(model.nk()) {}

  // Offsets of the four parts, and the vector's length.
  int q() const { return 0; }
  int p() const { return nd; }
  int rho() const { return 2 * nd; }
  int rhoDot() const { return 2 * nd + nk; }
  int dim() const { return 2 * nd + 2 * nk; }

  // x (dim() values) -> the integrator's state (sized already) and the rig's rates (n_k).
  void read(const double* x, State& state, double* rho_dot) const {
    for (int i = 0; i < nd; ++i) {
      state.q[i] = x[q() + i];
      state.p[i] = x[p() + i];
    }
    for (int i = 0; i < nk; ++i) {
      state.rho[i] = x[rho() + i];
      rho_dot[i] = x[rhoDot() + i];
    }
  }
  // The integrator's state and the rig's rates (n_k) -> x (dim() values).
  void write(const State& state, const double* rho_dot, double* x) const {
    for (int i = 0; i < nd; ++i) {
      x[q() + i] = state.q[i];
      x[p() + i] = state.p[i];
    }
    for (int i = 0; i < nk; ++i) {
      x[rho() + i] = state.rho[i];
      x[rhoDot() + i] = rho_dot[i];
    }
  }
  // The model's configuration (q_d, rho), n_q = n_d + n_k values, from x.
  void configuration(const double* x, Eigen::Ref<Eigen::VectorXd> q_full) const {
    for (int i = 0; i < nd; ++i) q_full[i] = x[q() + i];
    for (int i = 0; i < nk; ++i) q_full[nd + i] = x[rho() + i];
  }
};

}  // namespace marionette

#pragma GCC visibility pop
