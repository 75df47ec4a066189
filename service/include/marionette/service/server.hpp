// SPDX-License-Identifier: BSD-3-Clause
// The planning service (docs/service.md): marionette.v1.Planner over gRPC.
//
// Contents
//   ServerOptions    where it listens, how many plans run at once and wait, security, limits.
//   PlannerServer    builds and runs the gRPC server: the Planner service on a bounded worker
//                    pool (RESOURCE_EXHAUSTED at once when workers and queue are full), health
//                    checking (grpc.health.v1) and server reflection; deadlines, cancellation
//                    and shutdown stop running plans within ~100 ms; one JSON log line per
//                    request.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette::service {

struct ServerOptions {
  std::string listen = "127.0.0.1:50051";   // host:port; port 0 = any free port (see port())
  int workers = 0;                          // plans/simulations at once; 0 = one per core
  int max_queue = -1;                       // waiting for a worker; -1 = as many as workers
  std::string roadmap_dir;                  // prm roadmaps saved/loaded here ("" = memory only)
  std::string tls_cert_file, tls_key_file;  // PEM; both or neither
  std::string token;                        // required as "authorization: Bearer <token>"
  int max_request_bytes = 16 << 20;
  // Memory gRPC may hold for requests being received, over all calls at once; 0 = 4 x
  // max_request_bytes.  Beyond it, streams are reset (the client sees RESOURCE_EXHAUSTED).
  std::int64_t max_receive_memory_bytes = 0;
  double max_time_limit_s = 300.0;  // a plan's time_limit_s must be in (0, this]
  double shutdown_grace_s = 2.0;    // on shutdown, running plans get this long, then cancelled
  std::ostream* log = nullptr;      // request log (JSON lines); null = stderr
};

// Hands memory the process has freed back to the system (glibc's malloc_trim; nothing
// elsewhere); the first call also fixes glibc's trim and mmap thresholds at 1 MiB, process-wide.
// The server calls it as it starts and once a second.
void releaseFreedMemory();

// Whether a listen address is on the loopback interface (127.0.0.0/8, ::1, localhost).
bool isLoopback(const std::string& listen_address);

// How long a drain waits, after the grace and the cancellation's second, for a handler that
// does not return.
constexpr std::chrono::seconds kDrainMargin{5};

class PlannerServer {
 public:
  // Throws FieldError naming the option that is wrong ("listen", "tls_key_file", "workers"): an
  // address off loopback without TLS or a token, a certificate without its key, workers < 1 ...
  explicit PlannerServer(ServerOptions options);
  ~PlannerServer();
  PlannerServer(const PlannerServer&) = delete;
  PlannerServer& operator=(const PlannerServer&) = delete;

  // Binds and starts serving.  Throws FieldError naming "listen" when the address cannot be
  // bound, "tls_cert_file" or "tls_key_file" when one cannot be read.
  void start();
  int port() const;  // the bound port
  const ServerOptions& options() const;
  // Stops accepting calls; running plans get the grace period, then are cancelled (their
  // clients see UNAVAILABLE).  Returns true when every handler has finished; false when one is
  // still running kDrainMargin after the grace and its second of cancellation (stuck where no
  // cancel reaches): the caller should then exit without destroying the server.  Idempotent.
  bool shutdown();
  // Blocks until shutdown() has completed.
  void wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace marionette::service

#pragma GCC visibility pop
