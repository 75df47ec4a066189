// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/service/server.hpp"

#include <google/protobuf/stubs/logging.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "call_guard.hpp"
#include "marionette/common/files.hpp"
#include "marionette/models/field_error.hpp"
#include "planner_service.hpp"

namespace marionette::service {

using Clock = SteadyClock;
constexpr const char* kPlannerService = "marionette.v1.Planner";

namespace {
// libprotobuf writes its complaints (a string field that is not UTF-8, ...) as plain text on
// stderr, in the middle of the JSON-lines log: they become log events of the newest server still
// running.  The handler writes under the lock a server takes to leave the list, so a sink is
// never used after its server is gone.
struct LibraryLogs {
  std::mutex mutex;
  std::vector<LogSink*> sinks;  // servers running, oldest first
};
LibraryLogs& libraryLogs() {
  static LibraryLogs* logs = new LibraryLogs;  // never destroyed: protobuf may log at exit
  return *logs;
}
void routeLibraryLogs(LogSink& sink) {
  static std::once_flag installed;
  std::call_once(installed, [] {
    google::protobuf::SetLogHandler(
        [](google::protobuf::LogLevel, const char* file, int line, const std::string& message) {
          LibraryLogs& logs = libraryLogs();
          std::lock_guard<std::mutex> lock(logs.mutex);
          if (!logs.sinks.empty())
            logs.sinks.back()->event(
                "protobuf", std::string(file) + ":" + std::to_string(line) + ": " + message);
        });
  });
  LibraryLogs& logs = libraryLogs();
  std::lock_guard<std::mutex> lock(logs.mutex);
  logs.sinks.push_back(&sink);
}
void stopRoutingLibraryLogs(LogSink& sink) {
  LibraryLogs& logs = libraryLogs();
  std::lock_guard<std::mutex> lock(logs.mutex);
  logs.sinks.erase(std::remove(logs.sinks.begin(), logs.sinks.end(), &sink), logs.sinks.end());
}
}  // namespace

void releaseFreedMemory() {
#ifdef __GLIBC__
  // glibc raises its trim and mmap thresholds as large blocks are freed (to 64 MB and 32 MB):
  // after a few big requests each arena kept tens of MB that malloc_trim does not touch (the
  // top of a thread's arena).  Fixed thresholds, set once, keep them giving memory back.
  static std::once_flag fixed;
  std::call_once(fixed, [] {
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 20);
  });
  malloc_trim(0);
#endif
}

bool isLoopback(const std::string& address) {
  std::string host = address;
  if (host.rfind("ipv4:", 0) == 0) host = host.substr(5);
  if (host.rfind("ipv6:", 0) == 0) host = host.substr(5);
  if (!host.empty() && host[0] == '[') {
    const auto close = host.find(']');
    host = host.substr(1, close == std::string::npos ? std::string::npos : close - 1);
  } else if (const auto colon = host.rfind(':');
             colon != std::string::npos && host.find(':') == colon) {
    host = host.substr(0, colon);  // host:port (IPv4 or a name)
  }
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// ---- The server --------------------------------------------------------------------------------

struct PlannerServer::Impl {
  ServerOptions options;
  std::unique_ptr<PlannerService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::once_flag shutdown_once;
  bool drained = true;  // every handler returned within the drain's bound
  std::thread trimmer;  // gives freed memory back to the system (see start())
};

PlannerServer::PlannerServer(ServerOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.workers == 0) options.workers = std::max(1u, std::thread::hardware_concurrency());
  if (options.workers < 1) throw FieldError("workers", "must be at least 1");
  if (options.max_queue < 0) options.max_queue = options.workers;
  if (options.max_request_bytes < 1024)
    throw FieldError("max_request_bytes", "must be at least 1024");
  if (options.max_receive_memory_bytes == 0)
    options.max_receive_memory_bytes = 4 * static_cast<std::int64_t>(options.max_request_bytes);
  if (options.max_receive_memory_bytes < options.max_request_bytes)
    throw FieldError(
        "max_receive_memory_bytes",
        "must be at least max_request_bytes (" + std::to_string(options.max_request_bytes) + ")");
  if (!(options.max_time_limit_s > 0)) throw FieldError("max_time_limit_s", "must be > 0 s");
  if (!(options.shutdown_grace_s >= 0) || !std::isfinite(options.shutdown_grace_s))
    throw FieldError("shutdown_grace_s", "must be a finite number >= 0 s");
  if (options.tls_cert_file.empty() != options.tls_key_file.empty())
    throw FieldError(options.tls_cert_file.empty() ? "tls_cert_file" : "tls_key_file",
                     "TLS needs both the certificate and its key");
  const bool tls = !options.tls_cert_file.empty();
  if (!isLoopback(options.listen) && !tls && options.token.empty())
    throw FieldError("listen", options.listen +
                                   " is off loopback: the server needs TLS (a certificate and "
                                   "its key) or a token there");
  impl_->options = std::move(options);
}

PlannerServer::~PlannerServer() {
  if (!shutdown()) {
    // A handler still runs, and the drain's thread still waits for it: what they use is left
    // alive, on purpose (the process is ending).
    (void)impl_.release();
    return;
  }
  if (impl_->service) stopRoutingLibraryLogs(impl_->service->log());  // its log is going
}

const ServerOptions& PlannerServer::options() const {
  return impl_->options;
}
int PlannerServer::port() const {
  return impl_->port;
}

void PlannerServer::start() {
  const ServerOptions& o = impl_->options;
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!o.tls_cert_file.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    auto read = [](const std::string& path, const char* field) {
      try {
        return readTextFile(path);
      } catch (const FileError& e) {
        throw FieldError(field, e.what());
      }
    };
    ssl.pem_key_cert_pairs.push_back(
        {read(o.tls_key_file, "tls_key_file"), read(o.tls_cert_file, "tls_cert_file")});
    creds = grpc::SslServerCredentials(ssl);
  }
  releaseFreedMemory();  // fixes glibc's thresholds before the first call
  impl_->service = std::make_unique<PlannerService>(impl_->options);
  routeLibraryLogs(impl_->service->log());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(o.listen, creds, &impl_->port);
  builder.RegisterService(impl_->service.get());
  builder.SetMaxReceiveMessageSize(o.max_request_bytes);
  // The memory gRPC may hold for calls being received, across all of them: it checks a message's
  // size only once the message is whole, so without a quota four 400 MB requests took 1.2 GB
  // before each was refused.  Beyond the quota it resets streams (RESOURCE_EXHAUSTED).
  grpc::ResourceQuota quota("marionette-server");
  quota.Resize(static_cast<std::size_t>(o.max_receive_memory_bytes));
  builder.SetResourceQuota(quota);
  // gRPC binds with SO_REUSEPORT by default: a second server on a port in use would start and
  // quietly take half of the connections.  Refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxSendMessageSize(-1);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> guards;
  guards.push_back(std::make_unique<CallGuardFactory>(impl_->service->log(), o.token));
  builder.experimental().SetInterceptorCreators(std::move(guards));
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || impl_->port == 0)
    throw FieldError("listen", o.listen +
                                   ": cannot listen there (in use, or not an address of this "
                                   "machine)");
  // Readiness is the health of "marionette.v1.Planner": NOT_SERVING while starting (the built-in
  // models and scenes loading), while every worker is busy and the queue full, and from the
  // moment a shutdown begins; balancing clients and front doors send elsewhere meanwhile.  The
  // server's own "" stays SERVING until the shutdown (liveness: an overloaded server is alive).
  if (auto* health = impl_->server->GetHealthCheckService()) {
    health->SetServingStatus(kPlannerService, false);
    impl_->service->warmUp();
    LogSink& log = impl_->service->log();
    impl_->service->onOverloadChange([health, &log, told = false](bool overloaded) mutable {
      health->SetServingStatus(kPlannerService, !overloaded);
      if (overloaded || told)  // the first SERVING is the start line's
        log.event("health",
                  overloaded ? "NOT_SERVING: every worker busy and the queue full" : "SERVING");
      told = true;
    });
  }
  // glibc keeps what a call freed in its arenas (a 400 MB request left the server at 684 MB);
  // once a second, hand it back.  Cheap (a few ms at most) and off every call's path.
  impl_->trimmer = std::thread([impl = impl_.get()] {
    std::unique_lock<std::mutex> lock(impl->mutex);
    while (!impl->done_cv.wait_for(lock, std::chrono::seconds(1), [&] { return impl->done; })) {
      lock.unlock();
      releaseFreedMemory();
      lock.lock();
    }
  });
}

bool PlannerServer::shutdown() {
  if (!impl_->server) return true;
  std::call_once(impl_->shutdown_once, [&] {
    if (auto* health = impl_->server->GetHealthCheckService()) health->Shutdown();
    const auto grace = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(impl_->options.shutdown_grace_s));
    impl_->service->beginShutdown(Clock::now() + grace);
    // Handlers stop on their own once the grace is over; gRPC cancels what is left after that,
    // and waits for every handler to return.  One stuck where no cancel reaches (a system call
    // that never returns) would hold the drain for ever: it is waited for kDrainMargin more.
    auto drained = std::make_shared<std::promise<void>>();
    std::future<void> done = drained->get_future();
    std::thread([server = impl_->server.get(), grace, drained] {
      server->Shutdown(std::chrono::system_clock::now() + grace + std::chrono::seconds(1));
      drained->set_value();
    }).detach();
    impl_->drained =
        done.wait_for(grace + std::chrono::seconds(1) + kDrainMargin) == std::future_status::ready;
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      impl_->done = true;
      impl_->done_cv.notify_all();
    }
    if (impl_->trimmer.joinable()) impl_->trimmer.join();
  });
  return impl_->drained;
}

void PlannerServer::wait() {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  impl_->done_cv.wait(lock, [&] { return impl_->done; });
}

}  // namespace marionette::service
