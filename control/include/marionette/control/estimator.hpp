// SPDX-License-Identifier: BSD-3-Clause
// The extended Kalman filter of Schultz & Murphey ("Embedded Control Synthesis Using One-Step
// Methods in Discrete Mechanics", ACC 2013, §IV): the process model is the variational
// integrator's one-step map x_{k+1} = f(x_k, u_k) with its exact linearization, the measurement
// model the model's point Jacobians (measurement.hpp).  The baseline replaces the process model
// with explicit Euler on (q, qdot) and its linearization with the one-step Euler Jacobian
// I + dt df/dx, evaluated at the estimate (by central differences of the Euler step): what
// Schultz & Murphey's Fig. 3 compares.
//
// Contents
//   ProcessModel       the VI one-step map, or explicit Euler.
//   EstimatorOptions   time step, process noise, initial uncertainty, how far back a late
//                      measurement is fused; checkEstimatorOptions.
//   Estimator          reset / predict (one tick, an input) / update (a measurement of a past
//                      tick: fused there, then re-predicted to now).
//
// The filtered state is z = (q_d, p) for the VI (p the discrete momentum; Schultz & Murphey
// eq. 7) and (q_d, qdot) for Euler; the rig's inputs rho are known (they are what was sent) and
// carry no uncertainty.  Process noise is a random configuration increment (position_std, m or
// rad, per step) and velocity increment (velocity_std, m/s or rad/s, per step) on every joint,
// independent: Q = diag(s_q^2 I, s_v^2 I) on (q, qdot), and on (q, p) the velocity part mapped
// by p = M(q) qdot: s_v^2 M M^T.
//
// Unilateral strings: the process Jacobian is the step's own, on its taut set.  A taut string is
// an exact constraint of the step, so the prediction carries no uncertainty across it (the
// filter knows the string's length); a slack string constrains nothing and the joints it
// would hold spread by the process noise until a measurement pins them.  A string that goes
// slack or catches within a step is a switch, not a derivative: that step's Jacobian is taken
// on the taut set the step converged to.  After an update, the next prediction starts from the
// corrected estimate even where it over-stretches a string (it is the step's inelastic catch
// that brings it back to length).
#pragma once

#include <Eigen/Core>
#include <memory>
#include <string>
#include <vector>

#include "marionette/control/measurement.hpp"
#include "marionette/models/baseline.hpp"
#include "marionette/models/integrator.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette::control {

enum class ProcessModel { VariationalIntegrator, Euler };
// "ekf" (the VI) and "ekf-euler".
const char* toString(ProcessModel p);
// The reverse; FieldError("estimator", ...) for anything else.
ProcessModel parseProcessModel(const std::string& name);

// The noise options' bounds (m or rad, m/s or rad/s): a puppet's joint does not jump a metre
// in a step; larger values only overflow the covariance (1e300 made it NaN in one step).
constexpr double kMaxPositionStd = 1.0;
constexpr double kMaxVelocityStd = 100.0;

struct EstimatorOptions {
  ProcessModel process = ProcessModel::VariationalIntegrator;
  double dt_s = 0.02;
  double damping_scale = 1.0;
  double position_std = 1e-4;        // process noise per step, m or rad
  double velocity_std = 0.02;        // process noise per step, m/s or rad/s
  double initial_position_std = 0.01;  // the uncertainty of the start, m or rad
  double initial_velocity_std = 0.05;  // m/s or rad/s
  int history_steps = 64;  // a measurement of a tick up to this many ticks ago is still fused
};

// Throws FieldError naming an option outside its range ("position_std", ...).
void checkEstimatorOptions(const EstimatorOptions& options);

struct EstimatorCounts {
  long predictions = 0;
  long updates = 0;         // measurements fused
  long repredictions = 0;   // ticks predicted again after a late measurement was fused
  long too_old = 0;         // measurements older than the history, or than the last fused one
  long step_failures = 0;   // predictions whose step had no single-step linearization (the
                            // covariance then grew by the process noise only)
};

class Estimator {
 public:
  // Throws FieldError naming the option ("dt_s", "position_std", ...): each in its range.
  Estimator(ModelPtr model, std::shared_ptr<const MeasurementModel> measurement,
            EstimatorOptions options);

  const EstimatorOptions& options() const { return options_; }
  const MeasurementModel& measurement() const { return *measurement_; }

  // Tick 0: the puppet at (q, qdot) (n_d each) with the rig at rho (n_k); the initial covariance.
  void reset(const Eigen::VectorXd& q, const Eigen::VectorXd& qdot, const Eigen::VectorXd& rho);
  // One tick with the rig's input u (n_k: rho at the next tick).  Returns the step's status; on
  // a failure the estimate is unchanged but the tick still advances (the input is remembered).
  StepStatus predict(const Eigen::VectorXd& u);

  enum class Fusion { Used, TooOld };
  // Fuses y (measurement().size() values) measured at `tick` (<= tick()): at that tick, then
  // predicted again to now with the inputs that were given.  Measurements must come in order:
  // one older than the last fused, or than the history, is not used (TooOld).
  Fusion update(long tick, const Eigen::VectorXd& y);

  long tick() const { return tick_; }
  const Eigen::VectorXd& q() const;
  // The estimate as the VI's state (q, p, rho), whichever the process model (the controller's
  // state); for Euler p is made from (q, qdot) as VariationalIntegrator::stateFromVelocity does.
  const State& viState();
  // 2 n_d x 2 n_d: on (q, p) or (q, qdot).
  const Eigen::MatrixXd& covariance() const;
  const EstimatorCounts& counts() const { return counts_; }
  // The last fused measurement's innovation y - h(q) and its normalized square
  // nu^T S^-1 nu (a consistency check: its mean is size() for a well-tuned filter).
  const Eigen::VectorXd& lastInnovation() const { return innovation_; }
  double lastNis() const { return nis_; }

 private:
  struct Entry {
    State vi;               // VI process
    ContinuousState euler;  // Euler process
    Eigen::MatrixXd P;
    Eigen::VectorXd u_next;  // the input given at this tick (for re-prediction)
  };
  Entry& at(long tick) { return ring_[static_cast<std::size_t>(tick % ring_.size())]; }
  const Entry& at(long tick) const { return ring_[static_cast<std::size_t>(tick % ring_.size())]; }
  StepStatus propagate(const Entry& from, const Eigen::VectorXd& u, Entry& to);
  // diag(s_q^2 I, s_v^2 I) on (q, qdot); on (q, p) the velocity part s_v^2 M(q) M(q)^T.
  void covarianceOf(double position_std, double velocity_std, const Eigen::VectorXd& q,
                    const Eigen::VectorXd& rho, Eigen::MatrixXd& Q);
  void fuse(Entry& e, const Eigen::VectorXd& y);

  ModelPtr model_;
  std::shared_ptr<const MeasurementModel> measurement_;
  EstimatorOptions options_;
  int nd_, nk_;
  VariationalIntegrator vi_;
  ExplicitIntegrator euler_;
  DynamicsData dyn_;
  std::vector<Entry> ring_;
  long tick_ = 0;
  long last_fused_ = -1;
  EstimatorCounts counts_;
  StepLinearization lin_;
  Eigen::MatrixXd F_, Q_, H_;
  Eigen::VectorXd innovation_, y_pred_, qfull_;
  double nis_ = 0.0;
  State vi_view_;
};

}  // namespace marionette::control

#pragma GCC visibility pop
