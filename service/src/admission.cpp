// SPDX-License-Identifier: BSD-3-Clause
#include "admission.hpp"

#include <iterator>

namespace marionette::service {

grpc::Status authorize(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                       const std::string& token) {
  if (token.empty()) return grpc::Status::OK;
  const auto refuse = [](const char* why) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string("authorization: ") + why);
  };
  const auto [first, last] = metadata.equal_range("authorization");
  if (first == last) return refuse("this server needs 'authorization: Bearer <token>' metadata");
  if (std::next(first) != last) return refuse("give the 'authorization' header once");
  const std::string expected = "Bearer " + token;
  const grpc::string_ref& given = first->second;
  bool ok = given.size() == expected.size();
  if (ok) {  // constant-time comparison
    unsigned char diff = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) diff |= given.data()[i] ^ expected[i];
    ok = diff == 0;
  }
  return ok ? grpc::Status::OK : refuse("the token is not this server's");
}

}  // namespace marionette::service
