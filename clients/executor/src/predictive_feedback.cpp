// SPDX-License-Identifier: BSD-3-Clause
#include "predictive_feedback.hpp"

#include <algorithm>
#include <chrono>

namespace marionette::executor {
namespace {
IntegratorOptions atRate(double rate_hz) {
  IntegratorOptions io;
  io.dt_s = 1.0 / rate_hz;
  return io;
}
}  // namespace

PredictiveFeedback::PredictiveFeedback(const ModelPtr& model, std::vector<State> reference,
                                       double rate_hz, int lead_ticks, Solver solve)
    : model_(model),
      reference_(std::move(reference)),
      solve_(std::move(solve)),
      lead_(std::max(1, lead_ticks)),
      predictor_(model, atRate(rate_hz)) {
  worker_ = std::thread([this] { work(); });
}

PredictiveFeedback::PredictiveFeedback(const ModelPtr& model, std::vector<State> reference,
                                       double rate_hz, const PredictiveOptions& options,
                                       int lead_ticks)
    : PredictiveFeedback(
          model, reference, rate_hz, lead_ticks,
          [controller =
               std::make_shared<const PredictiveController>(model, reference, rate_hz, options)](
              int i, const State& x, const Eigen::MatrixXd& before, const Eigen::MatrixXd& warm) {
            return controller->solve(i, x, before, warm);
          }) {}

PredictiveFeedback::~PredictiveFeedback() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

bool PredictiveFeedback::solving() {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_;
}

Eigen::VectorXd PredictiveFeedback::expected(int k) const {
  const int r = k - solution_from_;
  if (solution_.rows() > 0 && r >= 0 && r < solution_.rows()) return solution_.row(r).transpose();
  return reference_[static_cast<std::size_t>(
                        std::clamp(k, 0, static_cast<int>(reference_.size()) - 1))]
      .rho;
}

Eigen::VectorXd PredictiveFeedback::setpoints(int i) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (have_result_ && result_target_ <= i) {
    have_result_ = false;
    stats_.solve_ms.push_back(result_ms_);
    if (result_target_ < i) {
      ++stats_.late;
    } else {
      stats_.iterations.push_back(result_.iterations);
      if (!result_ok_ || result_.failed) {
        ++stats_.failed;
        solution_.resize(0, 0);  // the plan's setpoints until a solve succeeds
      } else {
        ++stats_.used;
        stats_.kept_warm += result_.kept_warm;
        solution_ = std::move(result_.inputs);
        solution_from_ = i;
      }
    }
  }
  return expected(i + 1);
}

void PredictiveFeedback::sent(int i, const State& x, const Eigen::VectorXd& before_last,
                              const Eigen::VectorXd& last, const Eigen::VectorXd& sent) {
  const int t = i + lead_;
  if (t > static_cast<int>(reference_.size()) - 2) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (busy_ || have_result_) return;
  }
  // The setpoints from rho_{i-1} to rho_t as they are expected to go out, and the estimate
  // predicted through them.
  std::vector<Eigen::VectorXd> rows = {before_last, last, sent};
  for (int k = i + 2; k <= t; ++k) rows.push_back(expected(k));
  State at = x, next = predictor_.makeState();
  for (int k = i + 1; k <= t; ++k) {
    if (predictor_.step(at, rows[static_cast<std::size_t>(k - i + 1)], next) != StepStatus::Ok)
      return;  // (no prediction: no solve this tick)
    at = next;
  }
  Job job;
  job.target = t;
  job.x = at;
  job.before.resize(2, model_->nk());
  job.before.row(0) = rows[static_cast<std::size_t>(t - 1 - i + 1)].transpose();
  job.before.row(1) = rows[static_cast<std::size_t>(t - 2 - i + 1)].transpose();
  const int from = t - solution_from_;
  if (solution_.rows() > 0 && from >= 0 && from < solution_.rows())
    job.warm = solution_.bottomRows(solution_.rows() - from);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = std::move(job);
    have_job_ = busy_ = true;
    ++stats_.started;
  }
  wake_.notify_all();
}

void PredictiveFeedback::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return have_job_ || stopping_; });
    if (stopping_) return;
    Job job = std::move(job_);
    have_job_ = false;
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    PredictiveSolve solved;
    bool ok = true;
    try {
      solved = solve_(job.target, job.x, job.before, job.warm);
    } catch (...) {
      ok = false;  // (counted as failed: the plan's setpoints)
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    lock.lock();
    result_ = std::move(solved);
    result_ok_ = ok;
    result_ms_ = ms;
    result_target_ = job.target;
    have_result_ = true;
    busy_ = false;
  }
}

}  // namespace marionette::executor
