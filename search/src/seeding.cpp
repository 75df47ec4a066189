// SPDX-License-Identifier: BSD-3-Clause
#include "seeding.hpp"

#include <ompl/util/Console.h>

namespace marionette::detail {

std::recursive_mutex& omplSeedMutex() {
  static std::recursive_mutex m;
  return m;
}

void quietOmpl() {
  static std::once_flag once;
  std::call_once(once, [] { ompl::msg::setLogLevel(ompl::msg::LOG_NONE); });
}

}  // namespace marionette::detail
