// SPDX-License-Identifier: BSD-3-Clause
// Baselines for comparison only: explicit Euler (as Egger, BSc thesis, ETH Zurich 2013 used) and
// classical RK4 on the continuous constrained model of Johnson & Murphey, ICRA 2007 §III-C:
//     M(q) qdd = dL/dq - (d2L/dv dq) qd + f - A_d^T Lambda          (eq. 10, our sign: Lambda >= 0
//     pulls) A_d qdd + A_k rhodd + qd_full^T D2h qd_full = 0  (taut strings) (eq. 11)
// Strings are unilateral as in Johnson & Murphey, ICRA 2007 §IV: a taut string whose Lambda would
// push goes slack; a slack string that becomes over-stretched while separating is caught by the
// inelastic impulse of eqs. 13-15.  Joint stops are treated the same way (the VI's hard limits). No
// constraint stabilisation: the drift is what these baselines show. Within a step the rig moves
// linearly from rho_k to rho_{k+1}; when the rig's velocity changes between steps, taut strings
// take the impulse that keeps them inextensible.
#pragma once

#include <Eigen/Core>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct ContinuousState {
  Eigen::VectorXd q;       // n_d
  Eigen::VectorXd qdot;    // n_d
  Eigen::VectorXd rho;     // n_k
  Eigen::VectorXd rhodot;  // n_k: the rig's velocity over the previous step
};

enum class ExplicitMethod { Euler, RK4 };

class ExplicitIntegrator {
 public:
  ExplicitIntegrator(ModelPtr model, ExplicitMethod method, double dt_s,
                     double damping_scale = 1.0);

  const Model& model() const { return *model_; }
  double dt() const { return dt_; }

  // One step to the input rho_next (n_k).  `next` may be `x`.
  StepStatus step(const ContinuousState& x, const Eigen::VectorXd& rho_next, ContinuousState& next,
                  StepReport* report = nullptr);

  // Kinetic + potential energy (J).
  double energy(const ContinuousState& x);

  ContinuousState makeState() const;

 private:
  // qdd for the given state and rig motion; fills tension_ and the active set.
  bool acceleration(const Eigen::VectorXd& q, const Eigen::VectorXd& qdot,
                    const Eigen::VectorXd& rho, const Eigen::VectorXd& rhodot, Eigen::VectorXd& qdd,
                    bool choose_active_set);
  // Inelastic impulse making every string in `active_` (plus those over-stretched and
  // separating) inextensible at velocity level (Johnson & Murphey, ICRA 2007 eq. 15).
  void applyCatchImpulse(const Eigen::VectorXd& q, Eigen::VectorXd& qdot,
                         const Eigen::VectorXd& rho, const Eigen::VectorXd& rhodot);

  void gatherConstraints(const Eigen::VectorXd& q_full);

  ModelPtr model_;
  ExplicitMethod method_;
  double dt_;
  int nd_, nk_, ns_;
  Eigen::VectorXd damping_;
  int nc_;  // strings, then joint stops
  DynamicsData dyn_;
  std::vector<char> active_;  // n_c
  Eigen::VectorXd tension_;   // n_s
  Eigen::MatrixXd G_;         // n_c x n_q constraint gradients
  Eigen::VectorXd gap_;       // n_c
};

}  // namespace marionette

#pragma GCC visibility pop
