// SPDX-License-Identifier: BSD-3-Clause
#include "remote.hpp"

#include <fstream>
#include <iostream>
#include <sstream>

#include "marionette/environments/scene.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/service/channel.hpp"
#include "marionette/service/wire.hpp"

namespace marionette::cli {
namespace {

bool isBuiltin(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string vector3Json(const v1::Vector3& v) {
  return "[" + jsonNumber(v.x()) + ", " + jsonNumber(v.y()) + ", " + jsonNumber(v.z()) + "]";
}

}  // namespace

RemoteOptions remoteOptions(const Args& a) {
  RemoteOptions o;
  o.server = a.values.at("--server");
  if (a.values.count("--token-file"))
    o.token = readFlagToken("--token-file", a.values.at("--token-file"));
  if (a.values.count("--tls-ca")) o.tls_ca = readFlagFile("--tls-ca", a.values.at("--tls-ca"));
  return o;
}

Remote::Remote(const RemoteOptions& options) : options_(options) {
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!options.tls_ca.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_ca;
    creds = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // long simulations come back in one message
  try {
    stub_ = v1::Planner::NewStub(service::plannerChannel(options.server, creds, args));
  } catch (const FieldError& e) {
    throw std::invalid_argument("--server: " + e.problem());
  }
}

grpc::Status Remote::streamed(const std::string& call,
                              const std::function<grpc::Status(grpc::ClientContext&)>& attempt) {
  for (int n = 1;; ++n) {
    grpc::ClientContext ctx;
    prepare(ctx);
    const grpc::Status status = attempt(ctx);
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE || n == kStreamAttempts) return status;
    std::cerr << "marionette: " << call << ": the server went away (" << status.error_message()
              << "); asking again (attempt " << n + 1 << " of " << kStreamAttempts << ")\n";
  }
}

void Remote::prepare(grpc::ClientContext& ctx) const {
  if (!options_.token.empty()) ctx.AddMetadata("authorization", "Bearer " + options_.token);
}

void Remote::check(const grpc::Status& status, const std::string& call) const {
  if (status.ok()) return;
  const bool bad_request = status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
                           status.error_code() == grpc::StatusCode::NOT_FOUND;
  static const char* const names[] = {"OK",
                                      "CANCELLED",
                                      "UNKNOWN",
                                      "INVALID_ARGUMENT",
                                      "DEADLINE_EXCEEDED",
                                      "NOT_FOUND",
                                      "ALREADY_EXISTS",
                                      "PERMISSION_DENIED",
                                      "RESOURCE_EXHAUSTED",
                                      "FAILED_PRECONDITION",
                                      "ABORTED",
                                      "OUT_OF_RANGE",
                                      "UNIMPLEMENTED",
                                      "INTERNAL",
                                      "UNAVAILABLE",
                                      "DATA_LOSS",
                                      "UNAUTHENTICATED"};
  const int code = static_cast<int>(status.error_code());
  const std::string name = code >= 0 && code <= 16 ? names[code] : std::to_string(code);
  // ABORTED: a simulation step failed (in-process: exit 1).
  const int exit_status = bad_request                                        ? 2
                          : status.error_code() == grpc::StatusCode::ABORTED ? 1
                                                                             : 6;
  throw RemoteError(exit_status, "server " + options_.server + ": " + call + ": " + name + ": " +
                                     status.error_message());
}

v1::ModelRef modelRef(const std::string& name_or_path) {
  v1::ModelRef r;
  if (isBuiltin(builtinModelNames(), name_or_path))
    r.set_name(name_or_path);
  else
    r.set_yaml(readFlagFile("--model", name_or_path));
  return r;
}

v1::SceneRef sceneRef(const std::string& name_or_path) {
  v1::SceneRef r;
  if (isBuiltin(builtinSceneNames(), name_or_path))
    r.set_name(name_or_path);
  else
    r.set_yaml(readFlagFile("--scene", name_or_path));
  return r;
}

// The same lines as the in-process `models` / `scenes` (marionette_cli.cpp).
int cmdModelsRemote(const Args& a, bool json) {
  Remote remote(remoteOptions(a));
  v1::ListModelsResponse list;
  {
    grpc::ClientContext ctx;
    remote.prepare(ctx);
    remote.check(remote.stub().ListModels(&ctx, {}, &list), "ListModels");
  }
  if (json) std::cout << "[\n";
  for (int i = 0; i < list.models_size(); ++i) {
    const v1::ModelSummary& m = list.models(i);
    if (!json) {
      std::cout << formatted("%-16s %2d dynamic, %2d kinematic, %2d strings  %s", m.name().c_str(),
                             m.dynamic_count(), m.kinematic_count(), m.string_count(),
                             m.description().c_str())
                << "\n";
      continue;
    }
    v1::DescribeModelRequest req;
    req.mutable_model()->set_name(m.name());
    v1::ModelDescription d;
    grpc::ClientContext ctx;
    remote.prepare(ctx);
    remote.check(remote.stub().DescribeModel(&ctx, req, &d), "DescribeModel");
    std::vector<std::string> dyn, kin, str, pts;
    for (const auto& v : d.dynamic()) dyn.push_back(v.name());
    for (const auto& v : d.kinematic()) kin.push_back(v.name());
    for (const auto& v : d.strings()) str.push_back(v.name());
    for (const auto& v : d.points()) pts.push_back(v.name());
    std::cout << "  {\"name\": " << jsonString(d.name())
              << ", \"description\": " << jsonString(d.description())
              << ", \"dynamic\": " << jsonArray(dyn) << ", \"kinematic\": " << jsonArray(kin)
              << ", \"strings\": " << jsonArray(str) << ", \"points\": " << jsonArray(pts) << "}"
              << (i + 1 < list.models_size() ? "," : "") << "\n";
  }
  if (json) std::cout << "]\n";
  return 0;
}

int cmdScenesRemote(const Args& a, bool json) {
  Remote remote(remoteOptions(a));
  v1::ListScenesResponse list;
  grpc::ClientContext ctx;
  remote.prepare(ctx);
  remote.check(remote.stub().ListScenes(&ctx, {}, &list), "ListScenes");
  if (json) std::cout << "[\n";
  for (int i = 0; i < list.scenes_size(); ++i) {
    const v1::SceneSummary& s = list.scenes(i);
    if (!json) {
      std::cout << formatted("%-12s %2d obstacles, %6lld triangles  %s", s.name().c_str(),
                             s.obstacles_size(), static_cast<long long>(s.triangles()),
                             s.description().c_str())
                << "\n";
      continue;
    }
    std::cout << "  {\"name\": " << jsonString(s.name())
              << ", \"description\": " << jsonString(s.description())
              << ", \"obstacles\": " << jsonArray({s.obstacles().begin(), s.obstacles().end()})
              << ", \"triangles\": " << s.triangles() << ", \"bounds\": "
              << (s.has_bounds() ? "{\"min\": " + vector3Json(s.bounds().min_m()) +
                                       ", \"max\": " + vector3Json(s.bounds().max_m()) + "}"
                                 : std::string("null"))
              << "}" << (i + 1 < list.scenes_size() ? "," : "") << "\n";
  }
  if (json) std::cout << "]\n";
  return 0;
}

int cmdVersionRemote(const Args& a, bool json, const std::string& own_version) {
  Remote remote(remoteOptions(a));
  v1::ServerInfo info;
  grpc::ClientContext ctx;
  remote.prepare(ctx);
  remote.check(remote.stub().GetServerInfo(&ctx, {}, &info), "GetServerInfo");
  if (json)
    std::cout << "{\"version\": " << jsonString(own_version)
              << ", \"server\": {\"version\": " << jsonString(info.version())
              << ", \"api\": " << jsonString(info.api()) << ", \"workers\": " << info.workers()
              << ", \"max_queue\": " << info.max_queue() << "}}\n";
  else
    std::cout << "marionette " << own_version << "\nserver: marionette-server " << info.version()
              << " (" << info.api() << "), " << info.workers() << " workers, " << info.max_queue()
              << " queued at most\n";
  return 0;
}

}  // namespace marionette::cli
