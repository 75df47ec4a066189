// SPDX-License-Identifier: BSD-3-Clause
#include "send_priority.hpp"

#include <pthread.h>
#include <sched.h>

#include <cstring>

namespace marionette::executor {

SendPriority::SendPriority() {
  sched_param old{};
  if (pthread_getschedparam(pthread_self(), &old_policy_, &old) != 0) {
    description_ = "normal (its policy could not be read)";
    return;
  }
  old_priority_ = old.sched_priority;
  sched_param rt{};
  rt.sched_priority = kRealTimePriority;
  const int error = pthread_setschedparam(pthread_self(), SCHED_RR, &rt);
  if (error == 0) {
    raised_ = true;
    description_ = "real-time (SCHED_RR " + std::to_string(kRealTimePriority) + ")";
  } else {
    description_ = std::string("normal (real-time not permitted: ") + std::strerror(error) +
                   "; grant CAP_SYS_NICE or an RLIMIT_RTPRIO)";
  }
}

SendPriority::~SendPriority() {
  if (!raised_) return;
  sched_param old{};
  old.sched_priority = old_priority_;
  pthread_setschedparam(pthread_self(), old_policy_, &old);
}

}  // namespace marionette::executor
