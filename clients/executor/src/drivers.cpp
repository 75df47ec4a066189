#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>

#include "marionette/executor/rig.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/simulation.hpp"

namespace marionette::executor {

void RigDriver::awaitReply(Clock::time_point until) {
  std::this_thread::sleep_until(until);
}

// ---- sim: ----------------------------------------------------------------------------------

namespace {
IntegratorOptions simOptions(double rate_hz, double damping_scale) {
  if (!(rate_hz > 0) || !std::isfinite(rate_hz))
    throw std::invalid_argument("sim: the send rate must be > 0 Hz");
  IntegratorOptions o;
  o.dt_s = 1.0 / rate_hz;
  o.damping_scale = damping_scale;
  return o;
}
}  // namespace

SimRig::SimRig(ModelPtr model, double rate_hz, double damping_scale,
               const Eigen::VectorXd& start_inputs)
    : model_(std::move(model)),
      period_s_(1.0 / rate_hz),
      vi_(model_, simOptions(rate_hz, damping_scale)) {
  const Eigen::VectorXd rho0 = start_inputs.size() ? start_inputs : model_->defaultInputs();
  if (rho0.size() != model_->nk())
    throw std::invalid_argument("sim: start inputs need " + std::to_string(model_->nk()) +
                                " values");
  const StartState start = resolveStart(model_, rho0, StartSpec{});
  state_ = vi_.stateFromVelocity(start.q, start.qdot, rho0);
  next_ = state_;
}

void SimRig::stepTo(const Eigen::VectorXd& rho_next) {
  const StepStatus st = vi_.step(state_, rho_next, next_);
  if (st != StepStatus::Ok)
    throw LinkError("sim: the simulated puppet failed a step at t = " +
                    std::to_string(tick_ * period_s_) + " s (" + toString(st) + ")");
  std::swap(state_, next_);
  ++tick_;
  q_history_.push_back(state_.q);
}

void SimRig::send(std::uint32_t seq, const Eigen::VectorXd& values) {
  if (values.size() != model_->nk()) throw std::invalid_argument("sim: wrong number of values");
  const auto now = Clock::now();
  if (!started_) {
    // The first frame sets the inputs at the rig's time 0 (the executor starts from what
    // readSetpoints said, so this moves nothing).
    started_ = true;
    t0_ = now;
    state_.rho = values;
    q_history_.push_back(state_.q);
  } else {
    const long target = std::max(
        tick_ + 1, std::lround(std::chrono::duration<double>(now - t0_).count() / period_s_));
    const Eigen::VectorXd held = state_.rho;
    while (tick_ + 1 < target) stepTo(held);  // periods without a frame: the input held
    stepTo(values);
  }
  frame_ticks_.push_back(tick_);
  pending_.push_back({AckEvent::Kind::Ack, seq, "", Clock::now()});
}

void SimRig::poll(std::vector<AckEvent>& out) {
  for (AckEvent& e : pending_) {
    e.received = Clock::now();  // delivered now, as a rig's ack read off the line would be
    out.push_back(e);
  }
  pending_.clear();
}

// ---- The line protocol over a byte link
// ----------------------------------------------------------

namespace {

// What serial and UDP share: frames out, lines in, GET / SET / HOLD.
class FramedRig : public RigDriver {
 public:
  FramedRig(std::string uri, RigConfig rig) : uri_(std::move(uri)), rig_(std::move(rig)) {}
  std::string uri() const override { return uri_; }

  Eigen::VectorXd readSetpoints() override {
    // Asked up to three times (a datagram may be lost); each try waits 0.3 s.
    for (int attempt = 0; attempt < 3; ++attempt) {
      const std::uint32_t seq = takeSeq();
      transmit(encodeFrame("GET", seq));
      const auto until = Clock::now() + std::chrono::milliseconds(300);
      while (Clock::now() < until) {
        waitReadable(until);
        for (const std::string& line : receiveLines()) {
          WireFrame f;
          if (decodeFrame(line, f) != DecodeResult::Ok) continue;
          if (f.type == "POS" && f.seq == seq) {
            Eigen::VectorXd values;
            std::string why;
            if (!decodeSetpoints(rig_, f.fields, values, &why))
              throw LinkError(uri_ + ": the rig's POS answer: " + why);
            return values;
          }
        }
      }
    }
    throw LinkError(uri_ + ": the rig did not answer GET (3 tries, 0.3 s each)");
  }

  void send(std::uint32_t seq, const Eigen::VectorXd& values) override {
    transmit(encodeFrame("SET", seq, encodeSetpoints(rig_, values)));
  }

  void poll(std::vector<AckEvent>& out) override {
    for (const std::string& line : receiveLines()) {
      WireFrame f;
      const DecodeResult r = decodeFrame(line, f);
      const auto now = Clock::now();
      if (r != DecodeResult::Ok) {
        out.push_back({AckEvent::Kind::Corrupt, readableSeq(line), line, now});
      } else if (f.type == "ACK") {
        out.push_back({AckEvent::Kind::Ack, f.seq, "", now});
      } else if (f.type == "NAK") {
        std::string why;
        for (const auto& x : f.fields) why += (why.empty() ? "" : ",") + x;
        out.push_back({AckEvent::Kind::Nak, f.seq, why, now});
      }  // POS answers to an earlier GET, anything else: ignored
    }
  }

  void awaitReply(Clock::time_point until) override { waitReadable(until); }

  void hold(std::uint32_t seq) noexcept override {
    try {
      transmit(encodeFrame("HOLD", seq));
    } catch (...) {
    }
  }

 protected:
  virtual void transmit(const std::string& frame) = 0;
  virtual std::vector<std::string> receiveLines() = 0;  // complete lines, without waiting
  virtual void waitReadable(Clock::time_point until) = 0;

  std::string uri_;
  RigConfig rig_;
};

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd = -1) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Until `fd` is readable (or hung up) or `until`, to the nanosecond (poll's milliseconds would
// wake up to 1 ms early or late).
void waitFd(int fd, Clock::time_point until) {
  const long long left_ns = std::max<long long>(
      0, std::chrono::duration_cast<std::chrono::nanoseconds>(until - Clock::now()).count());
  const timespec timeout{static_cast<time_t>(left_ns / 1000000000),
                         static_cast<long>(left_ns % 1000000000)};
  pollfd p{fd, POLLIN, 0};
  ::ppoll(&p, 1, &timeout, nullptr);
}

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

// "a=1&b=2" after '?'.
std::map<std::string, std::string> query(const std::string& uri, std::string& head) {
  std::map<std::string, std::string> q;
  const auto mark = uri.find('?');
  head = uri.substr(0, mark);
  if (mark == std::string::npos) return q;
  std::stringstream ss(uri.substr(mark + 1));
  for (std::string kv; std::getline(ss, kv, '&');) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument(uri + ": '" + kv + "' is not KEY=VALUE");
    q[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return q;
}

double number(const std::string& uri, const std::string& key, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v))
    throw std::invalid_argument(uri + ": " + key + "=" + text + " is not a number");
  return v;
}

}  // namespace

std::unique_ptr<RigDriver> openRig(const std::string& uri, const ModelPtr& model,
                                   const RigConfig& rig, double rate_hz) {
  std::string head;
  auto q = query(uri, head);
  auto take = [&](const std::string& key) {
    const auto it = q.find(key);
    if (it == q.end()) return std::string();
    const std::string v = it->second;
    q.erase(it);
    return v;
  };
  auto noMore = [&] {
    if (!q.empty())
      throw std::invalid_argument(uri + ": unknown option '" + q.begin()->first + "'");
  };
  if (head == "sim:" || head == "sim") {
    const std::string d = take("damping");
    noMore();
    return std::make_unique<SimRig>(model, rate_hz, d.empty() ? 1.0 : number(uri, "damping", d));
  }
  if (head.rfind("serial:", 0) == 0) {
    const std::string path = head.substr(7);
    const std::string b = take("baud");
    noMore();
    if (path.empty()) throw std::invalid_argument(uri + ": give the device, serial:/dev/ttyX");
    return std::make_unique<SerialRig>(
        uri, path, b.empty() ? 115200 : std::lround(number(uri, "baud", b)), rig);
  }
  if (head.rfind("udp:", 0) == 0) {
    noMore();
    const std::string addr = head.substr(4);
    const auto colon = addr.rfind(':');
    if (colon == std::string::npos || colon + 1 == addr.size())
      throw std::invalid_argument(uri + ": give HOST:PORT, udp:127.0.0.1:9000");
    std::string host = addr.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
    return std::make_unique<UdpRig>(uri, host, addr.substr(colon + 1), rig);
  }
  throw FieldError("rig", uri + ": unknown rig (sim:, serial:/dev/ttyX?baud=N, udp:HOST:PORT)");
}

}  // namespace marionette::executor
