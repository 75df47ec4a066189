// SPDX-License-Identifier: BSD-3-Clause
// Internal to the server: a server stream's writes, off the worker.  A client that never reads
// (its HTTP/2 window at 0) makes ServerWriter::Write wait for ever; two such clients held both
// workers and every other plan timed out.  Here a thread of the call's own writes, so that:
//   - progress events are offered, never waited for: one not yet sent is replaced by a newer
//     one (a slow reader sees fewer), so nothing piles up;
//   - the result is queued, and the worker is released once the work is done;
//   - finish() waits for the result to reach the transport until a bound (the call's deadline,
//     at most kMaxUnreadStream after the result is ready), then cancels the call, which frees
//     the write and the thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "marionette/v1/planner.grpc.pb.h"

namespace marionette::service {

// How long a finished stream's result may wait for its client to read it.
constexpr std::chrono::seconds kMaxUnreadStream{10};

class StreamOut {
 public:
  StreamOut(grpc::ServerContext* ctx, grpc::ServerWriter<v1::PlanEvent>* writer);
  // Drops what was not written; a write on its way gets finish()'s bound, then the call is
  // cancelled.  Joins the thread.
  ~StreamOut();
  StreamOut(const StreamOut&) = delete;
  StreamOut& operator=(const StreamOut&) = delete;

  // A progress event: replaces one not yet written.
  void progress(v1::PlanEvent event);
  // The last event (the plan), written after the progress event still waiting, if any.
  void result(v1::PlanEvent event);
  // Waits until everything offered has been written, or until the bound; false (and the call
  // cancelled) when the client did not read it in time or the call ended first.
  bool finish();
  // Whether finish() cancelled the call because its client did not read in time.
  bool unread() const { return unread_; }

 private:
  void run();
  // The call's deadline, at most kMaxUnreadStream from now.
  std::chrono::system_clock::time_point bound() const;
  grpc::ServerContext* ctx_;
  grpc::ServerWriter<v1::PlanEvent>* writer_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<v1::PlanEvent> progress_, result_;
  bool writing_ = false, failed_ = false, stop_ = false, unread_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace marionette::service
