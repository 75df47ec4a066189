// SPDX-License-Identifier: BSD-3-Clause
// Stopping long work early: a deadline, a client's cancel, a shutdown.
//
// Contents
//   CancelFn         asked by long work; true = stop as soon as possible.
//   PlanCancelled    what the libraries throw when told to stop: their own type, so that a
//                    server tells a stopped call from a failure without asking its transport.
//   CancelScope      a CancelFn for the calling thread, while the scope lives.  The libraries'
//                    loops whose length a request sets -- rest poses, simulations, the
//                    integrator's substeps, linearizations, the optimizers' evaluations,
//                    performance editing -- poll it (throwIfCancelled), so that a caller's
//                    cancel reaches work far below the call it was given to.  Scopes nest: every
//                    enclosing scope is asked.
//   throwIfCancelled / cancelRequested   the poll.
//
// Functions that take a CancelFn install it as a scope for their work; a server installs one
// around each call.  Without a scope the poll costs a thread-local load.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include "marionette/models/error.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

using CancelFn = std::function<bool()>;  // true = stop as soon as possible

class PlanCancelled : public ErrorOf<std::runtime_error> {
 public:
  explicit PlanCancelled(const std::string& where)
      : ErrorOf<std::runtime_error>(where + ": cancelled") {}
};

class CancelScope {
 public:
  // An empty `cancelled` installs nothing.  The function is called from this thread only, as
  // often as the work polls (every integrator step, say): it should be cheap, or throttle itself.
  explicit CancelScope(CancelFn cancelled);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  friend bool cancelRequested();
  CancelFn cancelled_;
  CancelScope* outer_;
  bool installed_;
  mutable bool said_stop_ = false;  // latched: a scope that said stop is not asked again
};

// Whether a scope on this thread says stop (once one has, it keeps saying so).
bool cancelRequested();
// Throws PlanCancelled(where) when cancelRequested().
void throwIfCancelled(const char* where);

}  // namespace marionette

#pragma GCC visibility pop
