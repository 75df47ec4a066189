// SPDX-License-Identifier: BSD-3-Clause
#include "request_log.hpp"

#include <algorithm>
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
    case StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    default: return "OTHER";
  }
}

namespace {
// At most kMaxStatusMessageBytes, cut at a UTF-8 character boundary.
std::string bounded(const std::string& text) {
  if (text.size() <= kMaxStatusMessageBytes) return text;
  std::size_t cut = kMaxStatusMessageBytes - 20;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + " ... (cut short)";
}
}  // namespace

grpc::Status boundedStatus(const grpc::Status& status) {
  if (status.error_message().size() <= kMaxStatusMessageBytes) return status;
  return grpc::Status(status.error_code(), bounded(status.error_message()));
}

void LogSink::write(const std::vector<std::pair<std::string, std::string>>& fields,
                    const std::vector<std::string>& raw) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);  // handlers log from many threads
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  std::ostringstream line;
  {
    JsonLine entry(line);
    entry.members.text("time", stamp);
    for (const auto& [k, v] : fields) {
      if (std::find(raw.begin(), raw.end(), k) != raw.end())
        entry.members.key(k) << v;  // already JSON
      else
        entry.members.text(k.c_str(), bounded(v));
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  out_ << line.str() << std::flush;
}

RequestLog::~RequestLog() {
  std::vector<std::pair<std::string, std::string>> line = {{"method", method_}, {"peer", peer_}};
  line.insert(line.end(), fields_.begin(), fields_.end());
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f", 1e3 * secondsSince(t0_));
  line.emplace_back("status", codeName(code_));
  line.emplace_back("duration_ms", ms);
  if (!message_.empty()) line.emplace_back("message", message_);
  sink_.write(line, {"duration_ms"});
}

}  // namespace marionette::service
