// SPDX-License-Identifier: BSD-3-Clause
#include "rpc_requests.hpp"

void fuzzOne(const std::string& input) {
  fuzzRequest<marionette::v1::PlanRequest>(
      input, [](auto& resolver, const auto& request) {
        marionette::service::checkPlan(resolver, request, 300.0);
      });
}

MARIONETTE_FUZZ_ENTRY
