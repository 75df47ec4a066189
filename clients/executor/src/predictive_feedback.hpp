// SPDX-License-Identifier: BSD-3-Clause
// The closed loop's receding-horizon feedback (`--feedback mpc`): the transcription solved over a
// short horizon (trajopt/predictive_control.hpp) on a worker thread, so that the tick only splices
// in the latest solution.  Solves start every `period` samples (at i = 0, period, 2 period, ...);
// one started at plan sample i is for sample t = i + lead: from the estimate at i predicted
// through the setpoints that will go out until t (the solutions in force or back and waiting
// for their samples, else the plan's), its rig history those setpoints; the prediction is the
// worker's (the tick only copies the setpoints), and one that fails counts as a failed solve.  With a period shorter
// than the lead, solves overlap in what they cover: each starts from what the ones before it
// will send.  At sample t its solution is used if it has arrived (its inputs from t on, until the
// next one is used); a solve not back by then is late (its result dropped); one that failed (or
// threw) is counted and the setpoints are the plan's from its sample until a solve succeeds.  A
// start that finds the worker still busy is skipped and counted.  Deterministic in the solver's
// iterations as long as no solve is late and no start is skipped; the report counts both.  On a
// simulated rig's clock (waitForSolves) the tick waits for the solve it needs instead, and for a
// busy worker: none is late or skipped, and the run is the same on any load.
#pragma once

#include <Eigen/Core>
#include <atomic>
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
  // setpoints); solves by `solve` every period_ticks (>= 1) samples, each for the sample
  // lead_ticks (>= 1) ahead.
  PredictiveFeedback(const ModelPtr& model, std::vector<State> reference, double rate_hz,
                     int lead_ticks, int period_ticks, Solver solve);
  // With PredictiveController (its options as checkPredictiveOptions takes them) as the solver.
  PredictiveFeedback(const ModelPtr& model, std::vector<State> reference, double rate_hz,
                     const PredictiveOptions& options, int lead_ticks, int period_ticks);
  ~PredictiveFeedback();  // stops (below)

  // No solve starts any more, and one under way is abandoned within one of the solver's
  // iterations (a cancel inside its evaluations): a run's stop does not wait for a solve.
  void stop();

  // At play sample i: the setpoints the feedback asks for sample i + 1 (the plan's where no
  // solution reaches); the solution for sample i, back in time, becomes the one in force.
  Eigen::VectorXd setpoints(int i);
  // The setpoints for sample i + 1 went out as `sent` (x: the estimate at i; the rig's two before,
  // rho_i = last and rho_{i-1} = before_last): a solve starts if one is due at i (and the worker
  // is free: else the start is skipped).
  void sent(int i, const State& x, const Eigen::VectorXd& before_last, const Eigen::VectorXd& last,
            const Eigen::VectorXd& sent);
  // From now on setpoints(i) waits for a solve under way for a sample up to i + 1, and sent(i)
  // for a busy worker (a simulated clock stands still while the solve runs).
  void waitForSolves() { wait_for_solves_ = true; }
  const PredictiveStats& stats() const { return stats_; }
  int leadTicks() const { return lead_; }
  int periodTicks() const { return period_; }
  bool solving();  // a solve is under way (its result not back yet)

 private:
  // A solve's result, back from the worker.
  struct Result {
    int target = -1;
    bool ok = false;  // the solver returned (did not throw) and did not fail
    PredictiveSolve solve;
    double ms = 0.0;
  };
  // The result the worker left, if any, moved to back_ (under mutex_).
  void collect();
  // The solution that will be in force at sample t (the last waiting in back_ for a sample up to
  // t, else the one in force) and t's row in it; nullptr where the plan's setpoints will be.
  const Eigen::MatrixXd* inForce(int t, int* row) const;
  // The setpoint the loop expects to send at sample k > i + 1.
  Eigen::VectorXd expected(int k) const;
  // The rows of the solution in force at sample t, from t on (none: the plan's).
  Eigen::MatrixXd warmFrom(int t) const;
  void work();

  ModelPtr model_;
  std::vector<State> reference_;
  Solver solve_;
  int lead_, period_;
  VariationalIntegrator predictor_;  // the worker's
  Eigen::MatrixXd solution_;  // rows for samples solution_from_, ...
  int solution_from_ = 0;
  std::vector<Result> back_;  // back, waiting for their samples (in order)
  int now_ = -1;              // the last sample whose setpoints were given
  PredictiveStats stats_;

  // The worker's job and result, under mutex_.
  struct Job {
    int target = -1, from = -1;         // solved for sample target, started at sample from
    State x;                            // the estimate at `from`
    std::vector<Eigen::VectorXd> rows;  // the setpoints of samples from - 1 .. target
    Eigen::MatrixXd warm;
  };
  // On the worker: the estimate predicted to the job's target through its setpoints and the
  // rig's two setpoints before it (false: a step failed).
  bool predict(const Job& job, State& at, Eigen::MatrixXd& rig_before);
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;  // a solve is back (busy_ false)
  bool wait_for_solves_ = false;
  int in_flight_target_ = -1;  // the target of the solve under way (busy_)
  bool busy_ = false, have_job_ = false, have_result_ = false, stopping_ = false;
  std::atomic<bool> cancel_{false};  // polled by the solve under way (its CancelScope)
  Job job_;
  Result result_;
  std::thread worker_;
};

}  // namespace marionette::executor
