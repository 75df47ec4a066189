// The service's requests as bytes off the wire: decoded as gRPC would (a message that does not
// parse is refused there), then every check its handler makes before the work
// (service/src/request_checks.hpp), with the server's own resolver.
#pragma once

#include "fuzz_target.hpp"
#include "request_checks.hpp"

template <class Request, class Check>
void fuzzRequest(const std::string& input, Check&& check) {
  static marionette::service::Resolver resolver;
  Request request;
  if (!request.ParseFromString(input)) return;
  check(resolver, request);
}
