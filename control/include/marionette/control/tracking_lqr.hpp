// SPDX-License-Identifier: BSD-3-Clause
// Time-varying discrete LQR along a plan, on the variational integrator's exact linearization
// (Schultz & Murphey, ACC 2013 §IV; Johnson, Schultz & Murphey, "Structured Linearization of
// Discrete Mechanical Systems for Analysis and Optimal Control", IEEE T-ASE 2015).
//
// Contents
//   TrajectoryLinearization  the plan re-simulated at its rate: x_k and A_k, B_k per step.
//   linearizeTrajectory      builds it (throws SimulationError naming the step that fails).
//   (LqrWeights, the cost, and TrackingGains, the gains a plan carries: tracking_gains.hpp.)
//   riccatiGains             the backward Riccati recursion for any A_k, B_k, Q_k, R.
//   gainDynamics             A_k, B_k on the gains' state (the deviation and the rig's last).
//   feasibleDeviation        x - x_ref without what crosses the reference's taut strings.
//   computeTrackingGains     the gains along a linearization.
//   planTrackingGains        the gains for a plan's inputs from its first state, at rest (at most
//                            kMaxGainsValues of linearization).
// The loops over a plan's steps poll the calling thread's CancelScope (models/cancel.hpp): a
// linearization or gains told to stop throw PlanCancelled.
//
// The state is the VI's x = (q_d, p, rho) (n_x = 2 n_d + n_k) and the input u_k = rho_{k+1},
// the next setpoints: the rig's deviation from the plan is part of the state (it is what the
// last corrections left), so the cost can hold it near the plan.  The velocity error is
// weighted through the reference's mass matrix, p = M qdot: dp^T M^-T W_v M^-1 dp.
//
// The gains act on s_k = (x_k - x_ref_k, rho_{k-1} - rho_ref_{k-1}) (n_s = n_x + n_k): with the
// rig's previous deviation the cost weighs the correction's acceleration as well as its rate.
// A string is inextensible: a jump in a setpoint's speed reaches the part it holds as an
// impulse, and the light parts of a puppet (PuppetCopter's hands and feet) answer a 0.1 mm
// random walk of the setpoints with 0.05 rad of flailing; corrections must be smooth.
#pragma once

#include <Eigen/Core>
#include <utility>
#include <vector>

#include "marionette/models/dynamics.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/control/tracking_gains.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette::control {

struct TrajectoryLinearization {
  double dt_s = 0.0;
  std::vector<State> x;           // N: x_0 (the start) ... x_{N-1}
  std::vector<Eigen::MatrixXd> A;  // N - 1: dx_{k+1}/dx_k
  std::vector<Eigen::MatrixXd> B;  // N - 1: dx_{k+1}/du_k
  std::vector<std::vector<char>> taut;  // N: the strings taut at x_k (those of the step into
                                        // it; x_0: of the first step)
};

// inputs: N x n_k, row k the rig's setpoints at step k (row 0 = start.rho's time); the step k ->
// k + 1 takes row k + 1.  A step that has no single-step linearization (it needed substeps)
// throws SimulationError naming it.
TrajectoryLinearization linearizeTrajectory(const ModelPtr& model, const Eigen::MatrixXd& inputs,
                                            const State& start, const IntegratorOptions& options);


// K_k = (R + B^T P_{k+1} B)^-1 (B^T P_{k+1} A + N^T),
// P_k = Q_k + A^T P_{k+1} A - (A^T P_{k+1} B + N) K_k,  P_N = Q_N; k = N-1 ... 0 for N = A.size():
// the minimizer of sum_k x_k^T Q_k x_k + u_k^T R u_k + 2 x_k^T N u_k + x_N^T Q_N x_N (N = 0 when
// `N` is empty).  With P, also the cost-to-go matrices P_0 ... P_N.
std::vector<Eigen::MatrixXd> riccatiGains(const std::vector<Eigen::MatrixXd>& A,
                                          const std::vector<Eigen::MatrixXd>& B,
                                          const std::vector<Eigen::MatrixXd>& Q,
                                          const Eigen::MatrixXd& R, const Eigen::MatrixXd& Q_N,
                                          std::vector<Eigen::MatrixXd>* P = nullptr,
                                          const Eigen::MatrixXd& N = Eigen::MatrixXd());

// The gains' state's dynamics: s_{k+1} = A_s s_k + B_s u_k with A_s = [A 0; E 0], B_s = [B; 0]
// (E picks drho out of dx).
void gainDynamics(const Eigen::MatrixXd& A, const Eigen::MatrixXd& B, int nk,
                  Eigen::MatrixXd& A_s, Eigen::MatrixXd& B_s);

// The cost of a step is s^T Q s + u^T R u + 2 s^T N u (n_s = n_x + n_k, u = du):
//   position |dq|^2 + velocity |M^-1 dp|^2 + rig |drho|^2 + correction |du|^2
//   + correction_rate |du - drho|^2 / dt^2 + correction_accel |du - 2 drho + drho_prev|^2 / dt^4.
// Q_k at the reference state x_k (the velocity through M(q_k)); R; N.
Eigen::MatrixXd stateCost(const Model& model, const State& x, const LqrWeights& w, double dt_s);
Eigen::MatrixXd inputCost(const Model& model, const LqrWeights& w, double dt_s);
Eigen::MatrixXd crossCost(const Model& model, const LqrWeights& w, double dt_s);

// The deviation x - ref (n_x: q, p, rho) that the plan's model can have: a measured puppet is
// never exactly on the model's constraints (its strings are not the model's), and a deviation
// across a taut string would read to the linearization as an impulse.  The q part is projected
// onto the reference's taut strings at the rig x has (G_q dq + G_rho drho = 0), the p part onto
// their velocity constraint, both in the mass matrix's metric (M^-1 G^T (G M^-1 G^T)^-1 G): the
// projection of constrained mechanics.  `data` is the caller's scratch for this model.
Eigen::VectorXd feasibleDeviation(const Model& model, DynamicsData& data, const State& x,
                                  const State& ref, const std::vector<char>& taut);


// Throws FieldError as checkLqrWeights; SimulationError (naming the step) if a gain is not
// finite.
TrackingGains computeTrackingGains(const ModelPtr& model, const TrajectoryLinearization& lin,
                                   const LqrWeights& weights);

// The most numbers a plan's linearization may hold for its gains (N (n_x^2 + n_x n_k); 200 MB):
// PuppetCopter's over 7,500 samples (2.5 min at 50 Hz, 7.5 s at 1 kHz).
constexpr double kMaxGainsValues = 2.5e7;

// The gains for a plan: `inputs` (N x n_k, rows at rate_hz) re-simulated at dt = 1 / rate_hz
// from the joints q0 (n_d) at rest at the first row, as the plan's own verification does.
// Throws what linearizeTrajectory and computeTrackingGains throw, and FieldError("inputs") for
// a plan beyond kMaxGainsValues.
TrackingGains planTrackingGains(const ModelPtr& model, const Eigen::MatrixXd& inputs,
                                const Eigen::VectorXd& q0, double rate_hz,
                                const LqrWeights& weights);

}  // namespace marionette::control

#pragma GCC visibility pop
