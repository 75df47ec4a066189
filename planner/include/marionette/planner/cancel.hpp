// Stopping a plan early: callers pass a CancelFn that planners poll; when it says stop, the
// planner throws PlanCancelled (its own type, so that a server tells a stopped call from a
// failure without asking its transport again).
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace marionette {

using CancelFn = std::function<bool()>;  // true = stop as soon as possible

class PlanCancelled : public std::runtime_error {
 public:
  explicit PlanCancelled(const std::string& where) : std::runtime_error(where + ": cancelled") {}
};

}  // namespace marionette
