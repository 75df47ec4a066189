// SPDX-License-Identifier: BSD-3-Clause
#include "reaper.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace marionette::detail {
namespace {

class Reaper {
 public:
  static Reaper& instance() {
    static Reaper reaper;
    return reaper;
  }
  void drop(std::shared_ptr<void> garbage) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(garbage));
    }
    cv_.notify_one();
  }
  ~Reaper() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  Reaper() : thread_([this] { run(); }) {}
  void run() {
    while (true) {
      std::shared_ptr<void> garbage;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        garbage = std::move(queue_.front());
        queue_.pop_front();
      }
      garbage.reset();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<void>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

void dropLater(std::shared_ptr<void> garbage) { Reaper::instance().drop(std::move(garbage)); }

}  // namespace marionette::detail
