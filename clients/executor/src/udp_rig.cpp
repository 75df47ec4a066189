// SPDX-License-Identifier: BSD-3-Clause
// udp:HOST:PORT: the line protocol in datagrams, one frame or reply each.
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "framed_rig.hpp"

namespace marionette::executor::detail {
namespace {

class UdpRig : public FramedRig {
 public:
  UdpRig(const std::string& uri, const std::string& host, const std::string& port, RigConfig rig)
      : FramedRig(uri, std::move(rig)) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* res = nullptr;
    if (const int e = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); e != 0)
      throw std::invalid_argument(uri + ": cannot resolve '" + host + "': " + gai_strerror(e));
    int fd = ::socket(res->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    // Connected: datagrams from anyone else are dropped, and an ICMP "port unreachable"
    // comes back as ECONNREFUSED.
    if (fd < 0 || ::connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
      const std::string why = std::strerror(errno);
      ::freeaddrinfo(res);
      if (fd >= 0) ::close(fd);
      throw LinkError(uri + ": " + why);
    }
    ::freeaddrinfo(res);
    fd_ = std::make_unique<FileDescriptor>(fd);
  }

 protected:
  void transmit(const std::string& frame) override {
    const ssize_t n = ::send(fd_->get(), frame.data(), frame.size(), 0);
    if (n < 0 && errno != EAGAIN && errno != ENOBUFS) refused();
  }

  std::vector<std::string> receiveLines() override {
    std::vector<std::string> lines;
    char buf[2048];
    while (true) {
      const ssize_t n = ::recv(fd_->get(), buf, sizeof buf, 0);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) break;
        refused();
      }
      std::string d(buf, static_cast<std::size_t>(n));
      while (!d.empty() && (d.back() == '\n' || d.back() == '\r')) d.pop_back();
      lines.push_back(d);
    }
    return lines;
  }

  void waitReadable(Clock::time_point until) override { waitFd(fd_->get(), until); }

 private:
  [[noreturn]] void refused() {
    throw LinkError(uri_ + ": the rig is not listening (" + std::strerror(errno) + ")");
  }
  std::unique_ptr<FileDescriptor> fd_;
};

}  // namespace

std::unique_ptr<RigDriver> openUdpRig(const std::string& uri, const std::string& host,
                                      const std::string& port, RigConfig rig) {
  return std::make_unique<UdpRig>(uri, host, port, std::move(rig));
}

}  // namespace marionette::executor::detail
