// SPDX-License-Identifier: BSD-3-Clause
// Internal to the server: the marionette.v1.Planner handlers.  Each one logs, authorizes, takes
// a worker, converts the request (wire.hpp), calls the library, and converts the answer back;
// stopping (deadline, cancel, shutdown) and errors become gRPC statuses here and nowhere else.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <ostream>

#include "admission.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/roadmap_store/roadmap_cache.hpp"
#include "marionette/service/resolver.hpp"
#include "marionette/service/server.hpp"
#include "marionette/v1/planner.grpc.pb.h"
#include "request_log.hpp"
#include "stream_out.hpp"

namespace marionette::service {

class PlannerService final : public v1::Planner::Service {
 public:
  explicit PlannerService(const ServerOptions& options);
  LogSink& log() { return log_; }

  // Loads the built-in models and scenes, so that the first requests do not wait for them.
  void warmUp();
  // Told at once, then whenever it changes, whether every worker is busy and the queue full.
  void onOverloadChange(std::function<void(bool overloaded)> tell) {
    admission_.onFullChange(std::move(tell));
  }
  // Shutdown: running work gets until `deadline`, then stops.
  void beginShutdown(SteadyClock::time_point deadline);

  grpc::Status ListModels(grpc::ServerContext* ctx, const v1::ListModelsRequest* req,
                          v1::ListModelsResponse* out) override;
  grpc::Status DescribeModel(grpc::ServerContext* ctx, const v1::DescribeModelRequest* req,
                             v1::ModelDescription* out) override;
  grpc::Status ListScenes(grpc::ServerContext* ctx, const v1::ListScenesRequest* req,
                          v1::ListScenesResponse* out) override;
  grpc::Status Simulate(grpc::ServerContext* ctx, const v1::SimulateRequest* req,
                        v1::SimulateResponse* out) override;
  grpc::Status Plan(grpc::ServerContext* ctx, const v1::PlanRequest* req,
                    v1::PlanResponse* out) override;
  grpc::Status PlanStream(grpc::ServerContext* ctx, const v1::PlanRequest* req,
                          grpc::ServerWriter<v1::PlanEvent>* writer) override;
  grpc::Status Perform(grpc::ServerContext* ctx, const v1::PerformRequest* req,
                       grpc::ServerWriter<v1::PlanEvent>* writer) override;
  grpc::Status GetServerInfo(grpc::ServerContext* ctx, const v1::GetServerInfoRequest* req,
                             v1::ServerInfo* out) override;

 private:
  grpc::Status plan(grpc::ServerContext* ctx, const v1::PlanRequest& req, v1::PlanResponse* out,
                    const ProgressFn& progress, RequestLog& log);
  grpc::Status simulate(const v1::SimulateRequest& req, v1::SimulateResponse* out);
  // Progress events offered to `out` (one not yet written is replaced by the next): at most 10 a
  // second, the first of each phase always offered.
  static ProgressFn streamedProgress(StreamOut& out);
  // After the work (the worker released): OK once the result reached the transport, else the
  // call's stop status, or DEADLINE_EXCEEDED for a client that did not read it in time.
  grpc::Status finishStream(grpc::ServerContext* ctx, StreamOut& out);
  // What the planners poll: shouldStop, asked of gRPC at most once a millisecond.
  CancelFn cancelFor(grpc::ServerContext* ctx);
  // Runs fn, turning exceptions into statuses: the server never dies of a request.  An
  // unexpected exception's text goes to the log, not to the client.
  grpc::Status guarded(grpc::ServerContext* ctx, RequestLog& log,
                       const std::function<grpc::Status()>& fn);
  // fn on a worker (RESOURCE_EXHAUSTED when workers and queue are full); fn checks its request
  // first (request_checks.hpp).
  grpc::Status withWorker(grpc::ServerContext* ctx, RequestLog& log,
                          const std::function<grpc::Status()>& fn);
  bool shuttingDownNow();
  // The client cancelled, its deadline passed, or the server's shutdown grace is over.
  bool shouldStop(grpc::ServerContext* ctx);
  grpc::Status stoppedStatus(grpc::ServerContext* ctx);
  void describePlanRequest(const v1::PlanRequest& req, RequestLog& log);

  const ServerOptions& options_;
  LogSink log_;
  Admission admission_;
  Resolver resolver_;
  RoadmapCache roadmaps_;
  std::mutex shutdown_mutex_;
  bool shutting_down_ = false;
  SteadyClock::time_point shutdown_deadline_ = SteadyClock::time_point::max();
};

}  // namespace marionette::service
