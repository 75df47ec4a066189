// SPDX-License-Identifier: BSD-3-Clause
// Internal to the server: the request log, one JSON line per call (method, peer, the request's
// labels, status, duration, the error's message), and one per server event (a roadmap file set
// aside, a request that could not be decoded).
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

// A status message as a client sees it: at most kMaxStatusMessageBytes (gRPC sends it as
// metadata, limited to 8 KB: a longer one reached the client as RESOURCE_EXHAUSTED, "busy").
constexpr std::size_t kMaxStatusMessageBytes = 1024;
grpc::Status boundedStatus(const grpc::Status& status);

// Where the log lines go, one at a time.
class LogSink {
 public:
  explicit LogSink(std::ostream& out) : out_(out) {}
  // Writes {"time": ..., <fields in order>}: each value a JSON string (bounded as a status
  // message is) unless listed in `raw`.
  void write(const std::vector<std::pair<std::string, std::string>>& fields,
             const std::vector<std::string>& raw = {});
  // A server event: {"time", "event", "message"}.
  void event(const std::string& event, const std::string& message) {
    write({{"event", event}, {"message", message}});
  }

 private:
  std::ostream& out_;
  std::mutex mutex_;
};

// One request's log record, written when it goes out of scope.
class RequestLog {
 public:
  // A call that a client's retry policy sent again carries the attempts before it: logged as
  // "attempt" (2 for the first retry), absent on a first attempt.
  RequestLog(LogSink& sink, const char* method, grpc::ServerContextBase* ctx)
      : sink_(sink), method_(method), peer_(ctx->peer()), t0_(SteadyClock::now()) {
    const auto& metadata = ctx->client_metadata();
    if (const auto it = metadata.find("grpc-previous-rpc-attempts"); it != metadata.end()) {
      const std::string previous(it->second.data(), std::min<std::size_t>(it->second.size(), 4));
      if (!previous.empty() && previous.find_first_not_of("0123456789") == std::string::npos)
        set("attempt", std::to_string(std::stoi(previous) + 1));
    }
  }
  ~RequestLog();
  void set(const std::string& key, const std::string& value) { fields_.emplace_back(key, value); }
  grpc::Status finish(grpc::Status s) {
    s = boundedStatus(s);
    code_ = s.error_code();
    message_ = s.error_message();
    return s;
  }

 private:
  LogSink& sink_;
  const char* method_;
  std::string peer_;
  SteadyClock::time_point t0_;
  std::vector<std::pair<std::string, std::string>> fields_;
  grpc::StatusCode code_ = grpc::StatusCode::OK;
  std::string message_;
};

}  // namespace marionette::service
