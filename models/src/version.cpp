// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/models/version.hpp"

namespace marionette {

const char* libraryVersion() {
  return MARIONETTE_VERSION;
}

}  // namespace marionette
