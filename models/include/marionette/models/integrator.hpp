// SPDX-License-Identifier: BSD-3-Clause
// The midpoint variational integrator with kinematic inputs and unilateral strings
// (Schultz & Murphey, "Embedded Control Synthesis Using One-Step Methods in Discrete
// Mechanics", ACC 2013, §II; Johnson & Murphey, "Dynamic Modeling and Motion Planning for
// Marionettes: Rigid Bodies Articulated by Massless Strings", ICRA 2007, §III-IV; docs/design.md).
//
// Contents
//   State                 x_k = (q_d, p, rho): the one-step-map state (Schultz & Murphey, eq. 7).
//   StepReport            what one step did: Newton iterations, tensions, taut strings, residual.
//   StepStatus            Ok, or why a step failed (a failed step never yields a silent state).
//   IntegratorOptions     time step, tolerances, damping scale.
//   VariationalIntegrator one instance per thread; shares the immutable Model.
//
// The step solves, for q_{d,k+1} and the multipliers lambda_A of the active (taut) strings
// and joint stops,
//     p_k + D1 L_d(q_k, q_{k+1}) + f-_k - Dh_A(q_k)^T lambda = 0        (n_d rows)
//     h_A(q_{k+1}) = 0                                               (|A| rows)
// then p_{k+1} = D2 L_d(q_k, q_{k+1}), with L_d(q1, q2) = dt L((q1+q2)/2, (q2-q1)/dt) and
// f-_k = dt * (damping + joint-limit damping forces) at the midpoint.  Strings are unilateral:
// the active set is chosen so that every taut string pulls (lambda >= 0) and no slack string
// ends over-stretched; a slack string that catches takes the inelastic impulse of Johnson &
// Murphey, ICRA 2007 eqs. 13-15 in discrete form.  Tension of string j:
// T_j = lambda_j |a_j - e_j| / dt (newtons).  Joint stops (limits without a spring) and contacts
// with the stage's surfaces (contact.hpp; normal force lambda / dt) are unilateral constraints
// handled the same way.
#pragma once

#include <Eigen/Core>
#include <memory>
#include <string>
#include <vector>

#include "marionette/models/contact.hpp"
#include "marionette/models/model.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

struct State {
  Eigen::VectorXd q;    // n_d: dynamic configuration (rad or m)
  Eigen::VectorXd p;    // n_d: discrete momentum p_k = D2 L_d(q_{k-1}, q_k)
  Eigen::VectorXd rho;  // n_k: kinematic configuration (rig setpoints)
};

struct StepReport {
  int substeps = 1;            // > 1 when the step needed the substep fallback
  int newton_iterations = 0;   // summed over active-set passes
  int active_set_changes = 0;  // constraints switched between slack and taut
  int modes_at_once = 0;  // 1 if the rows' modes, chosen one at a time, cycled and the step took
                          // them all at once (the linear complementarity problem; substeps: how
                          // many did)
  // 1 if the step (and its substeps) failed with the capsules' middles (contact.hpp's segment
  // rows) and was taken without them: a middle may then enter a body, as the collision checker
  // sees.
  int segment_rows_dropped = 0;
  Eigen::VectorXd tension_N;            // n_s: string tensions over the step (0 when slack)
  std::vector<char> taut;               // n_s: 1 if the string was taut (active) over the step
  int stops_active = 0;                 // joint stops in contact over the step
  int contacts_active = 0;              // contact rows (IntegratorOptions::contacts) touching
  int contacts_sliding = 0;             // of which sliding (the friction force on its cone)
  Eigen::VectorXd contact_force_N;      // per contact row: its normal force over the step (N)
  // Per contact row: its friction force, world frame (N; a self-contact's on its point, its
  // body bearing the opposite).
  Eigen::Matrix3Xd contact_friction_N;
  double max_penetration_m = 0.0;  // max over contact rows of max(0, gap) at q_{k+1} (a self
                                   // row farther than 1 cm at q_k only when it ends inside)
  int unreachable_string = -1;          // with StepStatus::Unreachable: a string that cannot fit
  double energy_J = 0.0;                // T + V at the step midpoint, v = (q_{k+1} - q_k) / dt
  double max_violation_m = 0.0;         // max over strings of max(0, |a-e| - l) at q_{k+1}
  double constraint_residual_m = 0.0;   // max over taut strings of ||a-e| - l| at q_{k+1}
};

// Unreachable: no configuration satisfies the strings at the new rig input (a winch asked for a
// string shorter than the puppet can reach); StepReport::unreachable_string names one.
enum class StepStatus { Ok, NotConverged, Unreachable, NonFinite, BadInput };
const char* toString(StepStatus s);

// One step and its exact linearization (VariationalIntegrator::linearizeStep).
struct StepLinearization {
  Eigen::MatrixXd A, B;                  // dx_{k+1}/dx_k (n_x x n_x), dx_{k+1}/du_k (n_x x n_k)
  Eigen::MatrixXd tension_x, tension_u;  // dT/dx_k (n_s x n_x), dT/du_k (n_s x n_k); zero rows
                                         // for slack strings
  State next;                            // x_{k+1}
  StepReport report;                     // its tensions and taut set
};

struct IntegratorOptions {
  double dt_s = 0.01;
  double damping_scale = 1.0;        // multiplies every joint damping (0 = undamped)
  Eigen::VectorXd damping_override;  // n_d: if set, replaces the model's joint damping
  double constraint_tol_m = 1e-10;   // ||a-e| - l| for taut strings at convergence
  double residual_rel_tol = 1e-10;   // |DEL residual| relative to the momentum scale
  int max_newton_iterations = 50;
  int max_substep_halvings = 4;  // a step that fails is retried as 2, 4, ..., 16 substeps
  // Solve each Newton system by the joint tree's fill-free factorisation and a Schur complement
  // on the taut constraints (models/src/step_kkt.hpp); false: a pivoting dense LU, the same step to
  // round-off (tests/test_step_equivalence.cpp) and slower.
  bool tree_factorization = true;
  // Surfaces the puppet may touch and the points that touch them, and the puppet's links that
  // touch one another (contact.hpp), one unilateral row per (surface, point) and per
  // self-contact with Coulomb friction, inelastic; none when null (nothing touches anything).  The
  // constructor throws std::invalid_argument naming the field when they do not fit the model
  // (contactsProblem).
  std::shared_ptr<const Contacts> contacts;
  // Choose every row's mode at once (the linear complementarity problem of the linearized step,
  // Lemke's method) in every step, not only where the modes chosen one row at a time cycle: the
  // same steps to the tolerances, slower; for tests and comparisons.
  bool modes_at_once = false;
};

class VariationalIntegrator {
 public:
  explicit VariationalIntegrator(ModelPtr model, IntegratorOptions options = {});
  ~VariationalIntegrator();
  // A moved-from integrator may only be assigned to or destroyed.
  VariationalIntegrator(VariationalIntegrator&&) noexcept;
  VariationalIntegrator& operator=(VariationalIntegrator&&) noexcept;

  const Model& model() const;
  const IntegratorOptions& options() const;
  double dt() const { return options().dt_s; }

  // One step x_k -> x_{k+1} for the input u_k = rho_{k+1} (n_k).  `next` may be `x`.
  // A successful step allocates nothing once `next` and `report` have the right sizes (see
  // makeState/makeReport); diagnosing a failure (Unreachable or not) may.  Inside a CancelScope
  // that says stop (cancel.hpp), a long solve throws PlanCancelled (every 8th Newton iteration,
  // and between substep attempts).
  StepStatus step(const State& x, const Eigen::VectorXd& rho_next, State& next,
                  StepReport* report = nullptr);

  // Exact linearization of the step map by the implicit function theorem on the converged
  // step: A = dx_{k+1}/dx_k (n_x x n_x), B = dx_{k+1}/du_k (n_x x n_k), n_x = 2 n_d + n_k,
  // state order (q_d, p, rho).  Runs the step at (x, u) first; a step that needs the substep
  // fallback has no single-step linearization and reports NotConverged.
  // With tension_x / tension_u, also the step's string tensions' derivatives (StepReport::
  // tension_N): dT/dx_k (n_s x n_x) and dT/du_k (n_s x n_k), zero rows for slack strings (on the
  // step's own taut set: a string about to catch or go slack is a switch, not a derivative).
  StepStatus linearize(const State& x, const Eigen::VectorXd& rho_next, Eigen::MatrixXd& A,
                       Eigen::MatrixXd& B, Eigen::MatrixXd* tension_x = nullptr,
                       Eigen::MatrixXd* tension_u = nullptr);
  // The step itself and all of the above in one solve (a trajectory optimizer's rollout): the
  // same x_{k+1} as step() gives whenever step() needs no substeps.
  StepStatus linearizeStep(const State& x, const Eigen::VectorXd& rho_next, StepLinearization& out);

  // x from configuration and velocity (n_d each): p_0 = dL/dv + dt/2 dL/dq, which is
  // D2 L_d(q_-1, q_0) to second order and exact at rest, so a puppet started at rest stays
  // there with its static string tensions from the first step on.
  State stateFromVelocity(const Eigen::VectorXd& q, const Eigen::VectorXd& qdot,
                          const Eigen::VectorXd& rho);

  State makeState() const;
  StepReport makeReport() const;
  // Jacobian factorisations so far (the chord method reuses one across a step's iterations).
  long factorizations() const;

 private:
  struct Impl;  // the step's solver and its scratch (models/src/variational_step.hpp)
  std::unique_ptr<Impl> impl_;
};

}  // namespace marionette

#pragma GCC visibility pop
