// SPDX-License-Identifier: BSD-3-Clause
// The service's requests as bytes off the wire: decoded as gRPC would (a message that does not
// parse is refused there), then every check its handler makes before the work
// (marionette/service/request_checks.hpp), with the server's own resolver.
#pragma once

#include <google/protobuf/stubs/logging.h>

#include "fuzz_target.hpp"
#include "marionette/service/request_checks.hpp"

template <class Request, class Check>
void fuzzRequest(const std::string& input, Check&& check) {
  // libprotobuf's complaints about strings that are not UTF-8 (the server logs them as JSON
  // events): here they would fill the fuzz log with noise.
  static const bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  static marionette::service::Resolver resolver;
  Request request;
  if (!request.ParseFromString(input)) return;
  check(resolver, request);
}
