// SPDX-License-Identifier: BSD-3-Clause
#include "predictive_feedback.hpp"

#include <algorithm>
#include <chrono>

#include "marionette/models/cancel.hpp"

namespace marionette::executor {
namespace {
IntegratorOptions atRate(double rate_hz) {
  IntegratorOptions io;
  io.dt_s = 1.0 / rate_hz;
  return io;
}
}  // namespace

PredictiveFeedback::PredictiveFeedback(const ModelPtr& model, std::vector<State> reference,
                                       double rate_hz, int lead_ticks, int period_ticks,
                                       Solver solve)
    : model_(model),
      reference_(std::move(reference)),
      solve_(std::move(solve)),
      lead_(std::max(1, lead_ticks)),
      period_(std::max(1, period_ticks)),
      predictor_(model, atRate(rate_hz)) {
  worker_ = std::thread([this] { work(); });
}

PredictiveFeedback::PredictiveFeedback(const ModelPtr& model, std::vector<State> reference,
                                       double rate_hz, const PredictiveOptions& options,
                                       int lead_ticks, int period_ticks)
    : PredictiveFeedback(
          model, reference, rate_hz, lead_ticks, period_ticks,
          [controller =
               std::make_shared<const PredictiveController>(model, reference, rate_hz, options)](
              int i, const State& x, const Eigen::MatrixXd& before, const Eigen::MatrixXd& warm) {
            return controller->solve(i, x, before, warm);
          }) {}

PredictiveFeedback::~PredictiveFeedback() {
  stop();
  worker_.join();
}

void PredictiveFeedback::stop() {
  cancel_ = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  done_.notify_all();
}

bool PredictiveFeedback::solving() {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_;
}

void PredictiveFeedback::collect() {
  if (!have_result_) return;
  back_.push_back(std::move(result_));
  have_result_ = false;
}

const Eigen::MatrixXd* PredictiveFeedback::inForce(int t, int* row) const {
  const Eigen::MatrixXd* rows = &solution_;
  int from = solution_from_;
  // (A solution's row at its own sample is the one expected there when it was solved for; a
  // failed solve's sample keeps it, the plan's from the next.)
  for (auto r = back_.rbegin(); r != back_.rend(); ++r)
    if (r->target > now_ && (r->target < t || (r->target == t && r->ok))) {
      if (!r->ok) return nullptr;
      rows = &r->solve.inputs;
      from = r->target;
      break;
    }
  *row = t - from;
  return rows->rows() > 0 && *row >= 0 && *row < rows->rows() ? rows : nullptr;
}

Eigen::MatrixXd PredictiveFeedback::warmFrom(int t) const {
  int row = 0;
  const Eigen::MatrixXd* rows = inForce(t, &row);
  return rows ? Eigen::MatrixXd(rows->bottomRows(rows->rows() - row)) : Eigen::MatrixXd();
}

Eigen::VectorXd PredictiveFeedback::expected(int k) const {
  int row = 0;
  if (const Eigen::MatrixXd* rows = inForce(k, &row)) return rows->row(row).transpose();
  return reference_[static_cast<std::size_t>(
                        std::clamp(k, 0, static_cast<int>(reference_.size()) - 1))]
      .rho;
}

Eigen::VectorXd PredictiveFeedback::setpoints(int i) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (wait_for_solves_)
      done_.wait(lock, [&] { return !busy_ || in_flight_target_ > i + 1 || stopping_; });
    collect();
  }
  while (!back_.empty() && back_.front().target <= i) {
    Result r = std::move(back_.front());
    back_.erase(back_.begin());
    stats_.solve_ms.push_back(r.ms);
    if (r.target < i) {
      ++stats_.late;
      continue;
    }
    stats_.iterations.push_back(r.solve.iterations);
    if (!r.ok) {
      ++stats_.failed;
      solution_.resize(0, 0);  // the plan's setpoints until a solve succeeds
    } else {
      ++stats_.used;
      stats_.kept_warm += r.solve.kept_warm;
      stats_.shortened += r.solve.step_share > 0.0 && r.solve.step_share < 1.0;
      solution_ = std::move(r.solve.inputs);
      solution_from_ = i;
    }
  }
  now_ = i;
  return expected(i + 1);
}

void PredictiveFeedback::sent(int i, const State& x, const Eigen::VectorXd& before_last,
                              const Eigen::VectorXd& last, const Eigen::VectorXd& sent) {
  const int t = i + lead_;
  if (t > static_cast<int>(reference_.size()) - 2 || i % period_ != 0) return;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (wait_for_solves_) done_.wait(lock, [&] { return !busy_ || stopping_; });
    collect();  // (one back now, for a sample after i, is the setpoints' from then)
    if (stopping_) return;
    if (busy_) {
      ++stats_.skipped;
      return;
    }
  }
  now_ = i;
  // The setpoints from rho_{i-1} to rho_t as they are expected to go out: the estimate is
  // predicted through them on the worker (lead_ integrator steps: at 1 kHz, a quarter second's
  // worth, which in the tick would hold up the frames that follow it).
  Job job;
  job.target = t;
  job.from = i;
  job.x = x;
  job.rows = {before_last, last, sent};
  for (int k = i + 2; k <= t; ++k) job.rows.push_back(expected(k));
  job.warm = warmFrom(t);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = std::move(job);
    have_job_ = busy_ = true;
    in_flight_target_ = t;
    ++stats_.started;
  }
  wake_.notify_all();
}

bool PredictiveFeedback::predict(const Job& job, State& at, Eigen::MatrixXd& before) {
  // rows[r] is the setpoint of sample from - 1 + r.
  const int i = job.from, t = job.target;
  at = job.x;
  State next = predictor_.makeState();
  for (int k = i + 1; k <= t; ++k) {
    if (predictor_.step(at, job.rows[static_cast<std::size_t>(k - i + 1)], next) != StepStatus::Ok)
      return false;
    at = next;
  }
  before.resize(2, model_->nk());
  before.row(0) = job.rows[static_cast<std::size_t>(t - i)].transpose();
  before.row(1) = job.rows[static_cast<std::size_t>(t - i - 1)].transpose();
  return true;
}

void PredictiveFeedback::work() {
  // The solve's evaluations poll this: a stop abandons it within an iteration.
  const CancelScope scope([this] { return cancel_.load(std::memory_order_relaxed); });
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return have_job_ || stopping_; });
    if (stopping_) return;
    Job job = std::move(job_);
    have_job_ = false;
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    Result r;
    r.target = job.target;
    try {
      State x;
      Eigen::MatrixXd before;
      if (predict(job, x, before)) {  // (else failed: the plan's setpoints from its sample)
        r.solve = solve_(job.target, x, before, job.warm);
        r.ok = !r.solve.failed;
      }
    } catch (...) {
      r.ok = false;  // (counted as failed: the plan's setpoints; or abandoned at a stop)
    }
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    lock.lock();
    result_ = std::move(r);
    have_result_ = true;
    busy_ = false;
    done_.notify_all();
  }
}

}  // namespace marionette::executor
