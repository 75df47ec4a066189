// Internal to the server: the request log, one JSON line per call (method, peer, the request's
// labels, status, duration, the error's message).
#pragma once

#include <grpcpp/grpcpp.h>

#include <mutex>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "marionette/common/clock.hpp"

namespace marionette::service {

const char* codeName(grpc::StatusCode code);  // "INVALID_ARGUMENT", ...

// One request's log record, written as a JSON line when it goes out of scope.
class RequestLog {
 public:
  RequestLog(std::ostream& out, std::mutex& mutex, const char* method, grpc::ServerContext* ctx)
      : out_(out), mutex_(mutex), method_(method), peer_(ctx->peer()), t0_(SteadyClock::now()) {}
  ~RequestLog();
  void set(const std::string& key, const std::string& value) { fields_.emplace_back(key, value); }
  grpc::Status finish(grpc::Status s) {
    code_ = s.error_code();
    message_ = s.error_message();
    return s;
  }

 private:
  std::ostream& out_;
  std::mutex& mutex_;
  const char* method_;
  std::string peer_;
  SteadyClock::time_point t0_;
  std::vector<std::pair<std::string, std::string>> fields_;
  grpc::StatusCode code_ = grpc::StatusCode::OK;
  std::string message_;
};

}  // namespace marionette::service
