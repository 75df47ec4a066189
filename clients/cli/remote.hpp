// SPDX-License-Identifier: BSD-3-Clause
// The CLI as a client of marionette-server: --server HOST:PORT[,HOST:PORT...] or a dns: name
// [--token-file FILE] [--tls-ca FILE] on models, scenes, simulate and plan; balanced over the
// servers with health checking, and retried on UNAVAILABLE (marionette/service/channel.hpp).
//
// Contents
//   RemoteOptions / remoteOptions   the flags.
//   Remote          a channel and a stub; adds the token to each call; turns a failed call into
//                   RemoteError (exit 2 for a bad request, 6 when the server cannot answer).
//   modelRef / sceneRef   what to send for --model / --scene: a built-in name or the file's text.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "cli_util.hpp"
#include "listings.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/v1/planner.grpc.pb.h"

namespace marionette::cli {

namespace v1 = ::marionette::v1;

struct RemoteOptions {
  std::string server;  // host:port, a list of them, or a gRPC target URI (dns:///name:port)
  std::string token;   // from --token-file ("" = none)
  std::string tls_ca;  // PEM text of the CA that signed the server's certificate ("" = no TLS)
};
RemoteOptions remoteOptions(const Args& args);

// A failed call: the exit status to use and a message with the server's status.
class RemoteError : public std::runtime_error {
 public:
  RemoteError(int exit_status, const std::string& message)
      : std::runtime_error(message), exit_status_(exit_status) {}
  int exitStatus() const { return exit_status_; }

 private:
  int exit_status_;
};

class Remote {
 public:
  explicit Remote(const RemoteOptions& options);
  v1::Planner::Stub& stub() { return *stub_; }
  void prepare(grpc::ClientContext& ctx) const;  // the token, if any
  // Throws RemoteError unless ok: INVALID_ARGUMENT / NOT_FOUND exit 2, ABORTED (a failed
  // simulation step) 1, anything else 6.
  void check(const grpc::Status& status, const std::string& call) const;
  // A server-streaming call made by `attempt` on a fresh context, and made again from the start
  // when it ends UNAVAILABLE: before its first event the channel's retry policy resends it, but
  // after one only the client can (a server killed or drained mid-stream).  At most
  // kStreamAttempts in all; the last status is returned.
  static constexpr int kStreamAttempts = 5;
  grpc::Status streamed(const std::string& call,
                        const std::function<grpc::Status(grpc::ClientContext&)>& attempt);

 private:
  RemoteOptions options_;
  std::unique_ptr<v1::Planner::Stub> stub_;
};

v1::ModelRef modelRef(const std::string& name_or_path);
v1::SceneRef sceneRef(const std::string& name_or_path);

// A request's goal and planner options as the server takes them.
void goalAndOptionsToProto(const PlanRequest& req, v1::PlanRequest& r);

// `models --server ...`, `scenes --server ...`: the server's built-ins, as listed here.  With
// `names`, each model's variable, string and point names (a DescribeModel call each: --json);
// without, only as many empty names as it has (what a line of text shows).
std::vector<ModelListing> serverModels(const Args& args, bool names);
std::vector<SceneListing> serverScenes(const Args& args, bool json);
// `version --server ...`: this program's version and the server's.
int cmdVersionRemote(const Args& args, bool json, const std::string& own_version);

}  // namespace marionette::cli
