// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/cancel.hpp"

namespace marionette {
namespace {
thread_local CancelScope* innermost = nullptr;
}  // namespace

CancelScope::CancelScope(CancelFn cancelled)
    : cancelled_(std::move(cancelled)), outer_(innermost), installed_(bool(cancelled_)) {
  if (installed_) innermost = this;
}

CancelScope::~CancelScope() {
  if (installed_) innermost = outer_;
}

bool cancelRequested() {
  for (CancelScope* s = innermost; s; s = s->outer_) {
    // Once a scope has said stop, the work unwinds without asking it again.
    if (s->said_stop_ || (s->said_stop_ = s->cancelled_())) return true;
  }
  return false;
}

void throwIfCancelled(const char* where) {
  if (innermost && cancelRequested()) throw PlanCancelled(where);
}

}  // namespace marionette
