// SPDX-License-Identifier: BSD-3-Clause
// serial:/dev/ttyX?baud=N: the line protocol over a serial device (termios, 8N1, raw).
#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "framed_rig.hpp"

namespace marionette::executor::detail {
namespace {

speed_t baudConstant(long baud, const std::string& uri) {
  static const std::map<long, speed_t> rates = {
      {9600, B9600},       {19200, B19200},    {38400, B38400},   {57600, B57600},
      {115200, B115200},   {230400, B230400},  {460800, B460800}, {921600, B921600},
      {1000000, B1000000}, {2000000, B2000000}};
  const auto it = rates.find(baud);
  if (it == rates.end())
    throw std::invalid_argument(uri + ": baud " + std::to_string(baud) +
                                " is not a standard rate (9600 ... 2000000)");
  return it->second;
}

class SerialRig : public FramedRig {
 public:
  SerialRig(const std::string& uri, const std::string& path, long baud, RigConfig rig)
      : FramedRig(uri, std::move(rig)),
        fd_(::open(path.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)) {
    if (fd_.get() < 0) throw LinkError(uri + ": cannot open " + path + ": " + std::strerror(errno));
    termios t{};
    if (::tcgetattr(fd_.get(), &t) != 0)
      throw LinkError(uri + ": " + path + " is not a terminal: " + std::strerror(errno));
    ::cfmakeraw(&t);  // 8 data bits, no parity, no echo or line editing
    t.c_cflag &= ~(CSTOPB | CRTSCTS);  // 1 stop bit, no hardware flow control (PROTOCOL.md)
    const speed_t speed = baudConstant(baud, uri);
    ::cfsetispeed(&t, speed);
    ::cfsetospeed(&t, speed);
    t.c_cflag |= CLOCAL | CREAD;
    if (::tcsetattr(fd_.get(), TCSANOW, &t) != 0)
      throw LinkError(uri + ": cannot configure " + path + ": " + std::strerror(errno));
    ::tcflush(fd_.get(), TCIOFLUSH);
  }

 protected:
  void transmit(const std::string& frame) override {
    std::size_t done = 0;
    const auto until = Clock::now() + std::chrono::milliseconds(200);
    while (done < frame.size()) {
      const ssize_t n = ::write(fd_.get(), frame.data() + done, frame.size() - done);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EINTR) gone(std::strerror(errno));
      if (Clock::now() > until)
        throw LinkError(uri_ + ": the line is not draining (write blocked)");
      pollfd p{fd_.get(), POLLOUT, 0};
      ::poll(&p, 1, 5);
      if (p.revents & (POLLHUP | POLLERR)) gone("hang-up");
    }
  }

  std::vector<std::string> receiveLines() override {
    char buf[4096];
    while (true) {
      const ssize_t n = ::read(fd_.get(), buf, sizeof buf);
      if (n > 0) {
        pending_.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) gone("end of file");
      if (errno == EAGAIN || errno == EINTR) break;
      gone(std::strerror(errno));  // EIO: the other end of the line closed
    }
    pollfd p{fd_.get(), POLLIN, 0};
    ::poll(&p, 1, 0);
    if (p.revents & POLLHUP) gone("hang-up");
    std::vector<std::string> lines;
    for (std::size_t nl; (nl = pending_.find('\n')) != std::string::npos;) {
      lines.push_back(pending_.substr(0, nl));
      pending_.erase(0, nl + 1);
    }
    if (pending_.size() > 65536) pending_.clear();  // noise without newlines
    return lines;
  }

  void waitReadable(Clock::time_point until) override { waitFd(fd_.get(), until); }

 private:
  [[noreturn]] void gone(const std::string& why) {
    throw LinkError(uri_ + ": the device went away (" + why + ")");
  }
  FileDescriptor fd_;
  std::string pending_;
};

}  // namespace

std::unique_ptr<RigDriver> openSerialRig(const std::string& uri, const std::string& path, long baud,
                                         RigConfig rig) {
  return std::make_unique<SerialRig>(uri, path, baud, std::move(rig));
}

}  // namespace marionette::executor::detail
