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

}  // namespace

// A request's goal and planner options as the server takes them.
void goalAndOptionsToProto(const PlanRequest& req, v1::PlanRequest& r) {
  wire::goalToProto(req.goal, r.mutable_goal());
  const PlannerOptions& opt = req.options;
  r.set_planner(opt.planner);
  for (const auto& [k, v] : opt.parameters) (*r.mutable_parameters())[k] = v;
  r.set_time_limit_s(opt.time_limit_s);
  r.set_seed(opt.seed);
  r.set_output_rate_hz(opt.output_rate_hz);
  r.set_step_s(opt.step_s);
  r.set_roadmap_as_built(opt.roadmap_as_built);
  r.set_max_propagations(static_cast<std::uint64_t>(opt.max_propagations));
}

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

std::vector<ModelListing> serverModels(const Args& a, bool names) {
  Remote remote(remoteOptions(a));
  v1::ListModelsResponse list;
  {
    grpc::ClientContext ctx;
    remote.prepare(ctx);
    remote.check(remote.stub().ListModels(&ctx, {}, &list), "ListModels");
  }
  std::vector<ModelListing> out;
  for (const v1::ModelSummary& m : list.models()) {
    if (!names) {
      using Names = std::vector<std::string>;
      out.push_back({m.name(), m.description(), Names(m.dynamic_count()),
                     Names(m.kinematic_count()), Names(m.string_count()), Names()});
      continue;
    }
    v1::DescribeModelRequest req;
    req.mutable_model()->set_name(m.name());
    v1::ModelDescription d;
    grpc::ClientContext ctx;
    remote.prepare(ctx);
    remote.check(remote.stub().DescribeModel(&ctx, req, &d), "DescribeModel");
    ModelListing l{d.name(), d.description(), {}, {}, {}, {}};
    for (const auto& v : d.dynamic()) l.dynamic.push_back(v.name());
    for (const auto& v : d.kinematic()) l.kinematic.push_back(v.name());
    for (const auto& v : d.strings()) l.strings.push_back(v.name());
    for (const auto& v : d.points()) l.points.push_back(v.name());
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<SceneListing> serverScenes(const Args& a, bool /*json*/) {  // ListScenes has it all
  Remote remote(remoteOptions(a));
  v1::ListScenesResponse list;
  grpc::ClientContext ctx;
  remote.prepare(ctx);
  remote.check(remote.stub().ListScenes(&ctx, {}, &list), "ListScenes");
  const auto vector3 = [](const v1::Vector3& v) { return Eigen::Vector3d(v.x(), v.y(), v.z()); };
  std::vector<SceneListing> out;
  for (const v1::SceneSummary& s : list.scenes()) {
    SceneListing l{s.name(),
                   s.description(),
                   {s.obstacles().begin(), s.obstacles().end()},
                   static_cast<long long>(s.triangles()),
                   std::nullopt};
    if (s.has_bounds())
      l.bounds_m = std::make_pair(vector3(s.bounds().min_m()), vector3(s.bounds().max_m()));
    out.push_back(std::move(l));
  }
  return out;
}

int cmdVersionRemote(const Args& a, bool json, const std::string& own_version) {
  Remote remote(remoteOptions(a));
  v1::ServerInfo info;
  grpc::ClientContext ctx;
  remote.prepare(ctx);
  remote.check(remote.stub().GetServerInfo(&ctx, {}, &info), "GetServerInfo");
  if (json) {
    JsonLine out(std::cout);
    out.members.text("version", own_version);
    JsonLine server(out.members.key("server"), "");
    server.members.text("version", info.version());
    server.members.text("api", info.api());
    server.members.key("workers") << info.workers();
    server.members.key("max_queue") << info.max_queue();
  }
  else
    std::cout << "marionette " << own_version << "\nserver: marionette-server " << info.version()
              << " (" << info.api() << "), " << info.workers() << " workers, " << info.max_queue()
              << " queued at most\n";
  return 0;
}

}  // namespace marionette::cli
