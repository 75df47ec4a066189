// SPDX-License-Identifier: BSD-3-Clause
// The planning service inside a program of your own, with its planners registered first:
//   custom_server [--listen HOST:PORT]     (default 127.0.0.1:50051; SIGTERM or SIGINT stop it)
// Clients then ask for "syclop-rrt" or "syclop-est" as for any built-in planner.
#include <pthread.h>

#include <csignal>
#include <iostream>
#include <string>

#include "marionette/service/server.hpp"

extern "C" void marionette_register_planners();  // syclop_planners.cpp

int main(int argc, char** argv) try {
  marionette_register_planners();
  marionette::service::ServerOptions options;
  if (argc == 3 && std::string(argv[1]) == "--listen") options.listen = argv[2];
  // Signals are taken by this thread with sigwait; the server's threads have them blocked.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  marionette::service::PlannerServer server(options);
  server.start();
  std::cerr << "custom_server: listening on " << options.listen << " (port " << server.port()
            << ")" << std::endl;
  int signal = 0;
  sigwait(&signals, &signal);
  return server.shutdown() ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "custom_server: " << e.what() << "\n";
  return 2;
}
