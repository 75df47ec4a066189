#include "admission.hpp"

namespace marionette::service {

grpc::Status authorize(const grpc::ServerContext* ctx, const std::string& token) {
  if (token.empty()) return grpc::Status::OK;
  const auto& md = ctx->client_metadata();
  const auto it = md.find("authorization");
  const std::string expected = "Bearer " + token;
  bool ok = it != md.end() && it->second.size() == expected.size();
  if (ok) {  // constant-time comparison
    unsigned char diff = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) diff |= it->second.data()[i] ^ expected[i];
    ok = diff == 0;
  }
  return ok ? grpc::Status::OK
            : grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                           "authorization: this server needs 'authorization: Bearer <token>' "
                           "metadata");
}

}  // namespace marionette::service
