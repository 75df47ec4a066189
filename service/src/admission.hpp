// SPDX-License-Identifier: BSD-3-Clause
// Internal to the server: who gets in.  A bounded worker pool as an admission gate (calls
// beyond workers + queue are refused at once), and the bearer-token check.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace marionette::service {

// A bounded worker pool as an admission gate: up to `workers` calls run at once, up to `queue`
// more wait; beyond that a call is refused at once.
class Admission {
 public:
  Admission(int workers, int queue) : workers_(workers), queue_(queue) {}
  enum class Result { Admitted, Full, Stopped };
  // Waits for a worker while `stop` says nothing (checked every 10 ms).
  Result acquire(const std::function<bool()>& stop) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (running_ < workers_) {
      ++running_;
      tellLocked();
      return Result::Admitted;
    }
    if (waiting_ >= queue_) return Result::Full;
    ++waiting_;
    tellLocked();
    while (true) {
      cv_.wait_for(lock, std::chrono::milliseconds(10));
      if (running_ < workers_) {
        --waiting_;
        ++running_;
        tellLocked();
        return Result::Admitted;
      }
      if (stop()) {
        --waiting_;
        tellLocked();
        return Result::Stopped;
      }
    }
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --running_;
      tellLocked();
    }
    cv_.notify_one();
  }
  // Told whether the gate is full (the next call would be refused) at once, then on each change;
  // called under the gate's lock, so that the changes arrive in order.
  void onFullChange(std::function<void(bool full)> tell) {
    std::lock_guard<std::mutex> lock(mutex_);
    on_full_change_ = std::move(tell);
    told_full_ = full();
    if (on_full_change_) on_full_change_(told_full_);
  }

 private:
  bool full() const { return running_ >= workers_ && waiting_ >= queue_; }
  void tellLocked() {
    if (on_full_change_ && full() != told_full_) on_full_change_(told_full_ = full());
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  const int workers_, queue_;
  int running_ = 0, waiting_ = 0;
  std::function<void(bool)> on_full_change_;
  bool told_full_ = false;
};

// OK when no token is required or the call's metadata carries "authorization: Bearer <token>"
// once (compared in constant time); UNAUTHENTICATED otherwise, and for two such headers.
grpc::Status authorize(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                       const std::string& token);

}  // namespace marionette::service
