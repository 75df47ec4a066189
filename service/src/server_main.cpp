// SPDX-License-Identifier: BSD-3-Clause
// marionette-server: the planning service (docs/service.md).
//
//   marionette-server [--listen 127.0.0.1:50051] [--workers N] [--max-queue N]
//                     [--roadmap-dir DIR] [--tls-cert FILE --tls-key FILE] [--token-file FILE]
//                     [--max-request-bytes N] [--max-receive-memory BYTES] [--max-time-limit S]
//                     [--shutdown-grace S] [--plugin LIB.so]...
//   marionette-server --version
//
// Logs one JSON line per request on stderr.  SIGTERM or SIGINT: stop accepting calls, give
// running plans the grace period, cancel the rest (their clients see UNAVAILABLE), exit 0 (1
// when a call still runs 5 s after that: it is abandoned).
// Exit 2 on bad options or an address that cannot be bound.
#include <pthread.h>

#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "marionette/common/files.hpp"
#include "marionette/common/text.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/version.hpp"
#include "marionette/search/plugin.hpp"
#include "marionette/service/server.hpp"

namespace {

constexpr const char* kUsage =
    "usage: marionette-server [--listen HOST:PORT] [--workers N] [--max-queue N]\n"
    "                         [--roadmap-dir DIR] [--tls-cert FILE --tls-key FILE]\n"
    "                         [--token-file FILE] [--max-request-bytes N]\n"
    "                         [--max-receive-memory BYTES]\n"
    "                         [--max-time-limit S] [--shutdown-grace S]\n"
    "                         [--plugin LIB.so]...   (planners from a shared library)\n"
    "       marionette-server --version\n";

double number(const std::string& flag, const std::string& text) {
  double v;
  if (!marionette::parseFiniteNumber(text, v))
    throw std::invalid_argument(flag + ": expected a number, got '" + text + "'");
  return v;
}

// The server's option fields as this program's flags.
std::string flagMessage(const marionette::FieldError& e) {
  static const std::pair<const char*, const char*> kFlags[] = {
      {"listen", "--listen"},
      {"workers", "--workers"},
      {"tls_cert_file", "--tls-cert"},
      {"tls_key_file", "--tls-key"},
      {"max_request_bytes", "--max-request-bytes"},
      {"max_receive_memory_bytes", "--max-receive-memory"},
      {"max_time_limit_s", "--max-time-limit"},
      {"shutdown_grace_s", "--shutdown-grace"},
  };
  for (const auto& [field, flag] : kFlags)
    if (marionette::fieldWithin(e.field(), field)) return std::string(flag) + ": " + e.problem();
  return e.what();
}

int whole(const std::string& flag, const std::string& text, int lo) {
  const double v = number(flag, text);
  if (v != static_cast<int>(v) || v < lo)
    throw std::invalid_argument(flag + ": expected a whole number >= " + std::to_string(lo) +
                                ", got '" + text + "'");
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  using marionette::service::PlannerServer;
  using marionette::service::ServerOptions;
  ServerOptions opt;
  std::vector<std::string> plugin_planners;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        std::cout << kUsage;
        return 0;
      }
      if (a == "--version") {
        std::cout << "marionette-server " << MARIONETTE_VERSION << "\n";
        return 0;
      }
      if (i + 1 >= argc) throw std::invalid_argument(a + ": needs a value (or is unknown)");
      const std::string v = argv[++i];
      if (a == "--listen")
        opt.listen = v;
      else if (a == "--workers")
        opt.workers = whole(a, v, 1);
      else if (a == "--max-queue")
        opt.max_queue = whole(a, v, 0);
      else if (a == "--roadmap-dir")
        opt.roadmap_dir = v;
      else if (a == "--tls-cert")
        opt.tls_cert_file = v;
      else if (a == "--tls-key")
        opt.tls_key_file = v;
      else if (a == "--token-file")
        try {
          opt.token = marionette::readFirstLine(v);
        } catch (const marionette::FileError& e) {
          throw std::invalid_argument(a + ": " + e.what());
        }
      else if (a == "--max-request-bytes")
        opt.max_request_bytes = whole(a, v, 1024);
      else if (a == "--max-receive-memory") {
        const double bytes = number(a, v);
        if (bytes != std::floor(bytes) || bytes < 1024 || bytes > 1e15)
          throw std::invalid_argument(a + ": expected a whole number of bytes >= 1024, got '" + v +
                                      "'");
        opt.max_receive_memory_bytes = static_cast<std::int64_t>(bytes);
      } else if (a == "--max-time-limit")
        opt.max_time_limit_s = number(a, v);
      else if (a == "--shutdown-grace")
        opt.shutdown_grace_s = number(a, v);
      else if (a == "--plugin")
        try {
          for (const std::string& name : marionette::loadPlannerPlugin(v))
            plugin_planners.push_back(name);
        } catch (const marionette::FieldError& e) {
          throw std::invalid_argument(a + ": " + e.problem());
        }
      else
        throw std::invalid_argument("unknown option '" + a + "'");
    }
    // Signals are taken by one thread with sigwait; every other thread has them blocked.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    PlannerServer server(opt);
    server.start();
    std::cerr << "marionette-server " MARIONETTE_VERSION ": listening on " << opt.listen
              << " (port " << server.port() << "), " << server.options().workers << " workers, "
              << server.options().max_queue << " queued at most"
              << (opt.token.empty() ? "" : ", token required")
              << (opt.tls_cert_file.empty() ? "" : ", TLS")
              << (plugin_planners.empty()
                      ? ""
                      : ", planners from plugins: " + marionette::joinNames(plugin_planners))
              << std::endl;
    int sig = 0;
    sigwait(&signals, &sig);
    std::cerr << "marionette-server: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
              << ": shutting down" << std::endl;
    if (!server.shutdown()) {
      // A call stuck where no cancel reaches: the process ends anyway (its clients' calls end
      // with it), rather than never.
      std::cerr << "marionette-server: calls still running "
                << marionette::service::kDrainMargin.count()
                << " s after the grace; exiting without them" << std::endl;
      std::_Exit(1);
    }
    std::cerr << "marionette-server: stopped" << std::endl;
    return 0;
  } catch (const marionette::FieldError& e) {
    std::cerr << "marionette-server: " << flagMessage(e) << "\n" << kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "marionette-server: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (...) {  // (a plugin's code may throw anything)
    std::cerr << "marionette-server: failed: something that is not a std::exception was thrown\n";
    return 1;
  }
}
