// SPDX-License-Identifier: BSD-3-Clause
// Internal to the server: a gRPC server interceptor that sees every call, the Planner's and the
// health and reflection services' alike, at the points a handler cannot:
//   - a request gRPC could not decode (the handler never runs; gRPC answers INTERNAL with no
//     message): INVALID_ARGUMENT naming the method, and a JSON log line;
//   - every status message bounded (boundedStatus) as the client gets it;
//   - reflection follows the token: without it, its replies are emptied and the call ends
//     UNAUTHENTICATED (or, if its client keeps the stream open, is cancelled after 2 s).
//     Health checking stays open (load balancers probe without a token).
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <string>

#include "request_log.hpp"

namespace marionette::service {

class CallGuardFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  CallGuardFactory(LogSink& log, std::string token) : log_(log), token_(std::move(token)) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  LogSink& log_;
  const std::string token_;
};

}  // namespace marionette::service
