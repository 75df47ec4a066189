#include "request_log.hpp"

#include <cstdio>
#include <ctime>
#include <sstream>

#include "marionette/common/json_text.hpp"

namespace marionette::service {

using grpc::StatusCode;

const char* codeName(StatusCode code) {
  switch (code) {
    case StatusCode::OK: return "OK";
    case StatusCode::CANCELLED: return "CANCELLED";
    case StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case StatusCode::NOT_FOUND: return "NOT_FOUND";
    case StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    case StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case StatusCode::INTERNAL: return "INTERNAL";
    case StatusCode::ABORTED: return "ABORTED";
    default: return "OTHER";
  }
}

RequestLog::~RequestLog() {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);  // handlers log from many threads
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  std::ostringstream line;
  line << "{\"time\": \"" << stamp << "\", \"method\": \"" << method_
       << "\", \"peer\": " << jsonString(peer_);
  for (const auto& [k, v] : fields_) line << ", \"" << k << "\": " << jsonString(v);
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f", 1e3 * secondsSince(t0_));
  line << ", \"status\": \"" << codeName(code_) << "\", \"duration_ms\": " << ms;
  if (!message_.empty()) line << ", \"message\": " << jsonString(message_);
  line << "}\n";
  std::lock_guard<std::mutex> lock(mutex_);
  out_ << line.str() << std::flush;
}

}  // namespace marionette::service
