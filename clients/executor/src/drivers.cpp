// SPDX-License-Identifier: BSD-3-Clause
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>
#include <thread>

#include "marionette/common/text.hpp"
#include "marionette/executor/rig.hpp"
#include "marionette/models/field_error.hpp"
#include "marionette/models/model_io.hpp"
#include "marionette/models/simulation.hpp"

namespace marionette::executor {

void RigDriver::awaitReply(Clock::time_point until) {
  std::this_thread::sleep_until(until);
}

void RigDriver::pollMeasurements(std::vector<MeasurementFrame>&, long*) {}

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

// The truth must be the same puppet and rig by name: the executor streams the model's inputs to
// it and its sensors measure the model's points.
const SimTruth& checkedTruth(const ModelPtr& model, SimTruth& t) {
  if (!t.truth) t.truth = model;
  const Model& a = *model;
  const Model& b = *t.truth;
  auto names = [](const auto& items) {
    std::vector<std::string> n;
    for (const auto& i : items) n.push_back(i.name);
    return n;
  };
  if (names(a.kinematic) != names(b.kinematic) || names(a.dynamic) != names(b.dynamic))
    throw std::invalid_argument("sim: truth: '" + b.name + "' (" + b.source_file +
                                ") does not have the joints and rig inputs of '" + a.name + "'");
  for (const std::string& p : t.sensing.markers)
    if (b.pointIndex(p) < 0)
      throw std::invalid_argument("sim: truth: '" + b.name + "' has no point '" + p + "'");
  if (!(t.noise >= 0) || !std::isfinite(t.noise))
    throw std::invalid_argument("sim: noise must be >= 0");
  return t;
}
}  // namespace

SimRig::SimRig(ModelPtr model, double rate_hz, double damping_scale,
               const Eigen::VectorXd& start_inputs)
    : SimRig(std::move(model), rate_hz, SimTruth{nullptr, damping_scale, {}, 0.0, 1, {}},
             start_inputs) {}

SimRig::SimRig(ModelPtr model, double rate_hz, SimTruth truth,
               const Eigen::VectorXd& start_inputs)
    : model_(std::move(model)),
      truth_(checkedTruth(model_, truth)),
      period_s_(1.0 / rate_hz),
      vi_(truth_.truth, simOptions(rate_hz, truth_.damping_scale)),
      rng_(truth_.seed) {
  const Eigen::VectorXd rho0 = start_inputs.size() ? start_inputs : truth_.truth->defaultInputs();
  if (rho0.size() != model_->nk())
    throw std::invalid_argument("sim: start inputs need " + std::to_string(model_->nk()) +
                                " values");
  const StartState start = resolveStart(truth_.truth, rho0, StartSpec{});
  state_ = vi_.stateFromVelocity(start.q, start.qdot, rho0);
  next_ = state_;
  if (truth_.sensing.declared()) {
    if (!(truth_.sensing.rate_hz > 0)) throw std::invalid_argument("sim: rate must be > 0 Hz");
    measurement_ =
        std::make_unique<control::MeasurementModel>(truth_.truth, truth_.sensing.spec());
    truth_data_ = std::make_unique<DynamicsData>(*truth_.truth);
  }
  for (const SimTruth::Push& p : truth_.pushes)
    if (!truth_.truth->isDynamic(p.joint))
      throw std::invalid_argument("sim: a push must act on a joint");
  std::sort(truth_.pushes.begin(), truth_.pushes.end(),
            [](const SimTruth::Push& a, const SimTruth::Push& b) { return a.at_s < b.at_s; });
}

void SimRig::stepTo(const Eigen::VectorXd& rho_next) {
  const StepStatus st = vi_.step(state_, rho_next, next_);
  if (st != StepStatus::Ok)
    throw LinkError("sim: the simulated puppet failed a step at t = " +
                    std::to_string(tick_ * period_s_) + " s (" + toString(st) + ")");
  std::swap(state_, next_);
  ++tick_;
  // A push: the velocity jumps by dv, so the momentum by M dv (p = dL/dv + dt/2 dL/dq).
  while (pushes_done_ < truth_.pushes.size() &&
         truth_.pushes[pushes_done_].at_s <= tick_ * period_s_ + 1e-9) {
    const SimTruth::Push& p = truth_.pushes[pushes_done_++];
    Eigen::VectorXd dv = Eigen::VectorXd::Zero(model_->nd());
    dv[p.joint] = p.delta_velocity;
    DynamicsData d(*truth_.truth);
    const Eigen::VectorXd q = truth_.truth->configuration(state_.q, state_.rho);
    forwardKinematics(*truth_.truth, d, q);
    computeLagrangian(*truth_.truth, d, q, dv, LagrangianOrder::MassMatrix);
    state_.p += d.M * dv;
  }
  q_history_.push_back(state_.q);
  measure();
}

void SimRig::measure() {
  if (!measurement_) return;
  const double t = tick_ * period_s_;
  if (t + 1e-9 < next_measurement_s_) return;
  while (next_measurement_s_ <= t + 1e-9) next_measurement_s_ += 1.0 / truth_.sensing.rate_hz;
  MeasurementFrame f;
  f.seq = ++measurement_seq_;
  f.stamp_s = t;
  measurement_->evaluate(*truth_data_, truth_.truth->configuration(state_.q, state_.rho),
                         f.values);
  std::normal_distribution<double> noise(0.0, 1.0);
  for (Eigen::Index i = 0; i < f.values.size(); ++i) f.values[i] += truth_.noise * noise(rng_);
  in_flight_.emplace_back(
      t0_ + std::chrono::duration_cast<Clock::duration>(
                std::chrono::duration<double>(t + truth_.sensing.latency_s)),
      f);
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
    measure();
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

void SimRig::pollMeasurements(std::vector<MeasurementFrame>& out, long*) {
  // Taken in time order, each delivered its latency later: the due times are in order too.
  const auto now = Clock::now();
  std::size_t delivered = 0;
  while (delivered < in_flight_.size() && in_flight_[delivered].first <= now) {
    MeasurementFrame& f = in_flight_[delivered++].second;
    f.received = now;
    out.push_back(std::move(f));
  }
  in_flight_.erase(in_flight_.begin(), in_flight_.begin() + static_cast<long>(delivered));
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
    pump();
    out.insert(out.end(), acks_.begin(), acks_.end());
    acks_.clear();
  }

  const Sensing* sensing() const override {
    return rig_.sensing.declared() ? &rig_.sensing : nullptr;
  }

  void pollMeasurements(std::vector<MeasurementFrame>& out, long* corrupt) override {
    pump();
    for (auto& f : measurements_) out.push_back(std::move(f));
    measurements_.clear();
    if (corrupt) *corrupt += corrupt_measurements_;
    corrupt_measurements_ = 0;
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

 private:
  // Reads what came in: acknowledgements for poll(), measurements for pollMeasurements().
  void pump() {
    for (const std::string& line : receiveLines())
      readReply(rig_, line, Clock::now(), acks_, measurements_, &corrupt_measurements_);
  }
  std::vector<AckEvent> acks_;
  std::vector<MeasurementFrame> measurements_;
  long corrupt_measurements_ = 0;
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
    std::string key, value;
    if (!splitNameValue(kv, key, value))
      throw std::invalid_argument(uri + ": '" + kv + "' is not KEY=VALUE");
    q[key] = value;
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
    SimTruth t;
    const std::string d = take("damping"), truth = take("truth"), noise = take("noise"),
                      rate = take("rate"), latency = take("latency"), seed = take("seed");
    noMore();
    t.damping_scale = d.empty() ? 1.0 : number(uri, "damping", d);
    if (!(t.damping_scale >= 0)) throw std::invalid_argument(uri + ": damping must be >= 0");
    // Sensing: the rig file's, or every named point when the URI asks for measurements.
    t.sensing = rig.sensing;
    const bool measuring = !(truth + noise + rate + latency + seed).empty();
    if (!t.sensing.declared() && measuring) {
      for (const Point& p : model->points) t.sensing.markers.push_back(p.name);
      t.sensing.rate_hz = 30.0;
    }
    if (!rate.empty()) t.sensing.rate_hz = number(uri, "rate", rate);
    if (!latency.empty()) t.sensing.latency_s = number(uri, "latency", latency);
    t.noise = noise.empty() ? t.sensing.marker_noise_m : number(uri, "noise", noise);
    if (!noise.empty()) t.sensing.marker_noise_m = t.sensing.encoder_noise = t.noise;
    if (!(t.sensing.rate_hz > 0 && t.sensing.rate_hz <= 1000) && t.sensing.declared())
      throw std::invalid_argument(uri + ": rate must be in (0, 1000] Hz");
    if (!(t.sensing.latency_s >= 0 && t.sensing.latency_s <= 1))
      throw std::invalid_argument(uri + ": latency must be in [0, 1] s");
    if (!(t.noise >= 0 && t.noise <= 1)) throw std::invalid_argument(uri + ": noise must be in [0, 1]");
    if (!seed.empty()) {
      const double n = number(uri, "seed", seed);
      if (!(n >= 0 && n == std::floor(n) && n < 4294967296.0))
        throw std::invalid_argument(uri + ": seed must be an integer >= 0");
      t.seed = static_cast<unsigned>(n);
    }
    if (!truth.empty()) {
      try {
        t.truth = loadModel(truth);
      } catch (const std::exception& e) {
        throw std::invalid_argument(uri + ": truth: " + e.what());
      }
    }
    return std::make_unique<SimRig>(model, rate_hz, std::move(t));
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
