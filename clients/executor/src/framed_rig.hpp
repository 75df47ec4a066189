// SPDX-License-Identifier: BSD-3-Clause
// Internal to the executor's drivers: what the serial and UDP rigs share -- the line protocol
// over a byte link (frames out, lines in, GET / SET / HOLD), a file descriptor that closes
// itself, a wait on one -- and the two rigs' factories (serial_rig.cpp, udp_rig.cpp).
#pragma once

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "marionette/executor/protocol.hpp"
#include "marionette/executor/rig.hpp"

namespace marionette::executor::detail {

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
inline void waitFd(int fd, Clock::time_point until) {
  const long long left_ns = std::max<long long>(
      0, std::chrono::duration_cast<std::chrono::nanoseconds>(until - Clock::now()).count());
  const timespec timeout{static_cast<time_t>(left_ns / 1000000000),
                         static_cast<long>(left_ns % 1000000000)};
  pollfd p{fd, POLLIN, 0};
  ::ppoll(&p, 1, &timeout, nullptr);
}

std::unique_ptr<RigDriver> openSerialRig(const std::string& uri, const std::string& path, long baud,
                                         RigConfig rig);
std::unique_ptr<RigDriver> openUdpRig(const std::string& uri, const std::string& host,
                                      const std::string& port, RigConfig rig);

}  // namespace marionette::executor::detail
