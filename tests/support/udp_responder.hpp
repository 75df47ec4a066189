// SPDX-License-Identifier: BSD-3-Clause
// A UDP peer on loopback for the executor's tests and benchmark: every datagram it receives is
// passed to `answer`, and its reply is sent back to the sender, each line its own datagram.
// Header-only, so that the benchmark (which does not link the test support library) can use it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace marionette::test {

class UdpResponder {
 public:
  explicit UdpResponder(std::function<std::string(const std::string&)> answer)
      : answer_(std::move(answer)) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~UdpResponder() {
    done_ = true;
    thread_.join();
    ::close(fd_);
  }
  UdpResponder(const UdpResponder&) = delete;
  UdpResponder& operator=(const UdpResponder&) = delete;

  std::string uri() const { return "udp:127.0.0.1:" + std::to_string(port_); }

 private:
  void run() {
    char buf[2048];
    while (!done_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 5) <= 0) continue;  // 5 ms: how soon the destructor is answered
      sockaddr_in from{};
      socklen_t len = sizeof from;
      const ssize_t n =
          ::recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n <= 0) continue;
      const std::string reply = answer_(std::string(buf, static_cast<std::size_t>(n)));
      // One line per datagram, as the protocol carries them.
      for (std::size_t at = 0; at < reply.size();) {
        const std::size_t end = std::min(reply.find('\n', at), reply.size() - 1) + 1;
        ::sendto(fd_, reply.data() + at, end - at, 0, reinterpret_cast<sockaddr*>(&from), len);
        at = end;
      }
    }
  }
  std::function<std::string(const std::string&)> answer_;
  int fd_ = -1, port_ = 0;
  std::thread thread_;
  std::atomic<bool> done_{false};
};

}  // namespace marionette::test
