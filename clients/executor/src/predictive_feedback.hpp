// SPDX-License-Identifier: BSD-3-Clause
// The closed loop's receding-horizon feedback (`--feedback mpc`): the transcription solved over a
// short horizon (trajopt/predictive_control.hpp) on a worker thread, so that the tick only splices
// in the latest solution.  A solve started at plan sample i is for sample t = i + lead: from the
// estimate at i predicted through the setpoints that will go out until t (the solution in force,
// then the plan's), its rig history those setpoints.  At sample t its solution is used if it has
// arrived (its inputs from t on, until the next one is used); a solve not back by then is late
// (its result dropped: the setpoints stay the previous solution's where it reaches, else the
// plan's); one that failed (or threw) is counted and the setpoints are the plan's until a solve
// succeeds.  The next solve starts when the worker is free.  Deterministic in the solver's
// iterations as long as every solve is back in time; the report counts those that were not.
#pragma once

#include <Eigen/Core>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "marionette/executor/closed_loop.hpp"
#include "marionette/models/integrator.hpp"
#include "marionette/trajopt/predictive_control.hpp"

namespace marionette::executor {

class PredictiveFeedback {
 public:
  // A window's solve: PredictiveController::solve's arguments and result (it may throw: counted
  // as failed).  Called on the worker thread only.
  using Solver = std::function<PredictiveSolve(
      int i, const State& x, const Eigen::MatrixXd& rig_before, const Eigen::MatrixXd& warm)>;
  // reference: the plan re-simulated at rate_hz (a state per play sample, its rho the plan's
  // setpoints); solves by `solve` for the sample lead_ticks (>= 1) ahead.
  PredictiveFeedback(const ModelPtr& model, std::vector<State> reference, double rate_hz,
                     int lead_ticks, Solver solve);
  // With PredictiveController (its options as checkPredictiveOptions takes them) as the solver.
  PredictiveFeedback(const ModelPtr& model, std::vector<State> reference, double rate_hz,
                     const PredictiveOptions& options, int lead_ticks);
  ~PredictiveFeedback();  // waits for a solve under way

  // At play sample i: the setpoints the feedback asks for sample i + 1 (the plan's where no
  // solution reaches); the solution for sample i, back in time, becomes the one in force.
  Eigen::VectorXd setpoints(int i);
  // The setpoints for sample i + 1 went out as `sent` (x: the estimate at i; the rig's two before,
  // rho_i = last and rho_{i-1} = before_last): a solve starts if the worker is free.
  void sent(int i, const State& x, const Eigen::VectorXd& before_last, const Eigen::VectorXd& last,
            const Eigen::VectorXd& sent);
  const PredictiveStats& stats() const { return stats_; }
  int leadTicks() const { return lead_; }
  bool solving();  // a solve is under way (its result not back yet)

 private:
  // The setpoint the loop expects to send at sample k > i + 1 (the solution's, else the plan's).
  Eigen::VectorXd expected(int k) const;
  void work();

  ModelPtr model_;
  std::vector<State> reference_;
  Solver solve_;
  int lead_;
  VariationalIntegrator predictor_;
  Eigen::MatrixXd solution_;  // rows for samples solution_from_, ...
  int solution_from_ = 0;
  PredictiveStats stats_;

  // The worker's job and result, under mutex_.
  struct Job {
    int target = -1;
    State x;
    Eigen::MatrixXd before, warm;
  };
  std::mutex mutex_;
  std::condition_variable wake_;
  bool busy_ = false, have_job_ = false, have_result_ = false, stopping_ = false;
  Job job_;
  PredictiveSolve result_;
  bool result_ok_ = false;
  double result_ms_ = 0.0;
  int result_target_ = -1;
  std::thread worker_;
};

}  // namespace marionette::executor
