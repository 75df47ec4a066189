// SPDX-License-Identifier: BSD-3-Clause
// A marionette-server in the test's process, on a free loopback port, its request log kept:
// what the service tests (test_service.cpp, test_deadlines.cpp) call and read.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <ostream>
#include <regex>
#include <sstream>
#include <string>

#include "marionette/service/server.hpp"
#include "marionette/v1/planner.grpc.pb.h"

namespace marionette::test {

using service::PlannerServer;
using service::ServerOptions;

// A thread-safe text sink for the server's request log.
class LogSink : public std::stringbuf {
 public:
  std::string text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return str();
  }

 protected:
  int sync() override { return 0; }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::stringbuf::xsputn(s, n);
  }

 private:
  std::mutex mutex_;
};

// The server, a channel to it and a stub; its request log in `sink`.
struct Running {
  LogSink sink;
  std::ostream log{&sink};
  std::unique_ptr<PlannerServer> server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Planner::Stub> stub;

  explicit Running(ServerOptions o = {}) {
    if (o.listen == ServerOptions{}.listen) o.listen = "127.0.0.1:0";
    o.log = &log;
    server = std::make_unique<PlannerServer>(o);
    server->start();
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);  // a plan with gains at 1 kHz is ~14 MB
    channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server->port()),
                                        grpc::InsecureChannelCredentials(), args);
    stub = v1::Planner::NewStub(channel);
  }
  // The log line of the n-th request of `method` (JSON as text), or "".
  std::string logLine(const std::string& method, int n = 0) {
    std::istringstream is(sink.text());
    std::string line;
    while (std::getline(is, line))
      if (line.find("\"method\": \"" + method + "\"") != std::string::npos && n-- == 0) return line;
    return "";
  }
};

// A log line's duration_ms (-1 when it has none).
inline double durationMs(const std::string& log_line) {
  std::smatch m;
  if (!std::regex_search(log_line, m, std::regex("\"duration_ms\": ([0-9.]+)"))) return -1.0;
  return std::stod(m[1]);
}

}  // namespace marionette::test
