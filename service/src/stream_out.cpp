// SPDX-License-Identifier: BSD-3-Clause
#include "stream_out.hpp"

#include <algorithm>

namespace marionette::service {

StreamOut::StreamOut(grpc::ServerContext* ctx, grpc::ServerWriter<v1::PlanEvent>* writer)
    : ctx_(ctx), writer_(writer), thread_([this] { run(); }) {}

StreamOut::~StreamOut() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stop_ = true;
    progress_.reset();  // what was not written is dropped: the handler's status comes next
    result_.reset();
    changed_.notify_all();
    // A write on its way gets the same bound as a result; then the call is cancelled, which
    // ends it (the handler's status is then lost: the client had stopped reading).
    if (!changed_.wait_until(lock, bound(), [&] { return !writing_; })) ctx_->TryCancel();
  }
  thread_.join();
}

std::chrono::system_clock::time_point StreamOut::bound() const {
  return std::min(ctx_->deadline(), std::chrono::system_clock::now() + kMaxUnreadStream);
}

void StreamOut::progress(v1::PlanEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_ || result_) return;
    progress_ = std::move(event);
  }
  changed_.notify_all();
}

void StreamOut::result(v1::PlanEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_) return;
    // A progress event still waiting goes out first (the writer takes it before the result):
    // the last one before a plan is "verify", with the search's final figures.
    result_ = std::move(event);
  }
  changed_.notify_all();
}

bool StreamOut::finish() {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool written = changed_.wait_until(
      lock, bound(), [&] { return failed_ || (!writing_ && !progress_ && !result_); });
  if (written && !failed_) return true;
  if (!written) {
    unread_ = true;
    ctx_->TryCancel();  // frees a write the client never let through
  }
  return false;
}

void StreamOut::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stop_ || progress_ || result_; });
    if (stop_ && !progress_ && !result_) return;
    v1::PlanEvent event;
    if (progress_) {
      event = std::move(*progress_);
      progress_.reset();
    } else {
      event = std::move(*result_);
      result_.reset();
    }
    writing_ = true;
    lock.unlock();
    const bool ok = writer_->Write(event);
    lock.lock();
    writing_ = false;
    if (!ok) {  // the call is gone: nothing more can be written
      failed_ = true;
      progress_.reset();
      result_.reset();
    }
    changed_.notify_all();
    if (stop_ && !progress_ && !result_) return;
  }
}

}  // namespace marionette::service
