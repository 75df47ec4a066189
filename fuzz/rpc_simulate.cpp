// SPDX-License-Identifier: BSD-3-Clause
#include "rpc_requests.hpp"

void fuzzOne(const std::string& input) {
  fuzzRequest<marionette::v1::SimulateRequest>(input, marionette::service::checkSimulate);
}

MARIONETTE_FUZZ_ENTRY
