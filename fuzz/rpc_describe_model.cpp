// SPDX-License-Identifier: BSD-3-Clause
#include "rpc_requests.hpp"

void fuzzOne(const std::string& input) {
  fuzzRequest<marionette::v1::DescribeModelRequest>(input, [](auto& resolver, const auto& request) {
    marionette::wire::describeModel(*marionette::service::checkDescribeModel(resolver, request));
  });
}

MARIONETTE_FUZZ_ENTRY
