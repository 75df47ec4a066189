// Time-varying discrete LQR along a plan, on the variational integrator's exact linearization
// (Schultz & Murphey, ACC 2013 §IV; Johnson, Schultz & Murphey, "Structured Linearization of
// Discrete Mechanical Systems for Analysis and Optimal Control", IEEE T-ASE 2015).
//
// Contents
//   TrajectoryLinearization  the plan re-simulated at its rate: x_k and A_k, B_k per step.
//   linearizeTrajectory      builds it (throws SimulationError naming the step that fails).
//   LqrWeights               the cost: joint position and velocity errors, the rig's deviation,
//                            the correction; a terminal factor.
//   riccatiGains             the backward Riccati recursion for any A_k, B_k, Q_k, R.
//   TrackingGains            K_k for every step: u_{k+1} = u_ref_{k+1} - K_k (x_k - x_ref_k).
//   computeTrackingGains     the gains for a plan.
//
// The state is the VI's x = (q_d, p, rho) (n_x = 2 n_d + n_k) and the input u_k = rho_{k+1},
// the next setpoints: the rig's deviation from the plan is part of the state (it is what the
// last corrections left), so the cost can hold it near the plan.  The velocity error is
// weighted through the reference's mass matrix, p = M qdot: dp^T M^-T W_v M^-1 dp.
#pragma once

#include <Eigen/Core>
#include <vector>

#include "marionette/models/integrator.hpp"

namespace marionette::control {

struct TrajectoryLinearization {
  double dt_s = 0.0;
  std::vector<State> x;           // N: x_0 (the start) ... x_{N-1}
  std::vector<Eigen::MatrixXd> A;  // N - 1: dx_{k+1}/dx_k
  std::vector<Eigen::MatrixXd> B;  // N - 1: dx_{k+1}/du_k
};

// inputs: N x n_k, row k the rig's setpoints at step k (row 0 = start.rho's time); the step k ->
// k + 1 takes row k + 1.  A step that has no single-step linearization (it needed substeps)
// throws SimulationError naming it.
TrajectoryLinearization linearizeTrajectory(const ModelPtr& model, const Eigen::MatrixXd& inputs,
                                            const State& start, const IntegratorOptions& options);

struct LqrWeights {
  double position = 1e4;   // per (m or rad)^2 of each joint's error
  double velocity = 1e1;   // per (m/s or rad/s)^2 of each joint's velocity error
  double rig = 1e2;        // per (m or rad)^2 of each rig input's deviation from the plan
  double correction = 1e2;  // R: per (m or rad)^2 of each setpoint's correction
  double terminal = 10.0;   // the last state's cost is this times a step's
};

// K_k = (R + B_k^T P_{k+1} B_k)^-1 B_k^T P_{k+1} A_k,
// P_k = Q_k + A_k^T P_{k+1} (A_k - B_k K_k),  P_N = Q_N; k = N-1 ... 0 for N = A.size().
// With P, also the cost-to-go matrices P_0 ... P_N.
std::vector<Eigen::MatrixXd> riccatiGains(const std::vector<Eigen::MatrixXd>& A,
                                          const std::vector<Eigen::MatrixXd>& B,
                                          const std::vector<Eigen::MatrixXd>& Q,
                                          const Eigen::MatrixXd& R, const Eigen::MatrixXd& Q_N,
                                          std::vector<Eigen::MatrixXd>* P = nullptr);

// Q_k for the state x_k (block diagonal: position, velocity through M(q_k), rig).
Eigen::MatrixXd stateCost(const Model& model, const State& x, const LqrWeights& w);

struct TrackingGains {
  double dt_s = 0.0;
  LqrWeights weights;
  std::vector<Eigen::MatrixXd> K;  // N - 1 gains, n_k x n_x
  bool empty() const { return K.empty(); }
};

// Throws FieldError naming a weight that is not > 0 (position, velocity, rig and terminal may
// be 0).
TrackingGains computeTrackingGains(const ModelPtr& model, const TrajectoryLinearization& lin,
                                   const LqrWeights& weights);

}  // namespace marionette::control
