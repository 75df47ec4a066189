// SPDX-License-Identifier: BSD-3-Clause
// The send loop's priority over everything else the process does (the MPC's solver, the
// estimator's late fusions): for as long as it is held, the calling thread runs under the real-time
// round-robin policy (SCHED_RR), above every normal thread, where the system permits it (root,
// CAP_SYS_NICE or an RLIMIT_RTPRIO); else at its normal priority, and `description()` says why.
// Threads started before it (the MPC's worker) keep their normal priority.
#pragma once

#include <string>

namespace marionette::executor {

class SendPriority {
 public:
  static constexpr int kRealTimePriority = 40;  // of 1..99: under the kernel's own threads (50)
  SendPriority();
  ~SendPriority();  // the thread's policy before
  SendPriority(const SendPriority&) = delete;
  SendPriority& operator=(const SendPriority&) = delete;

  bool realTime() const { return raised_; }
  // "real-time (SCHED_RR 40)" or "normal (real-time not permitted: ...)".
  const std::string& description() const { return description_; }

 private:
  bool raised_ = false;
  int old_policy_ = 0;
  int old_priority_ = 0;
  std::string description_;
};

}  // namespace marionette::executor
