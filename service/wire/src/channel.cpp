// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/service/channel.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <vector>

#include "embedded_kServiceConfig.hpp"  // generated: proto/marionette/v1/service_config.json
#include "marionette/models/field_error.hpp"

namespace marionette::service {
namespace {

std::vector<std::string> splitAt(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(separator, begin);
    out.push_back(text.substr(begin, end - begin));
    if (end == std::string::npos) return out;
    begin = end + 1;
  }
}

// "host:port" or "[v6]:port" -> host, port; FieldError naming the entry otherwise.
std::pair<std::string, std::string> hostAndPort(const std::string& entry) {
  std::string host, port;
  if (!entry.empty() && entry[0] == '[') {
    const auto close = entry.find(']');
    if (close != std::string::npos && entry.compare(close + 1, 1, ":") == 0) {
      host = entry.substr(1, close - 1);
      port = entry.substr(close + 2);
    }
  } else if (const auto colon = entry.rfind(':'); colon != std::string::npos) {
    host = entry.substr(0, colon);
    port = entry.substr(colon + 1);
  }
  if (host.empty() || port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
      port.size() > 5)
    throw FieldError("server", "'" + entry + "': expected HOST:PORT");
  return {host, port};
}

// Every address of host:port in one family, as gRPC's "ipv4:"/"ipv6:" lists write them.
std::vector<std::string> addresses(const std::string& entry, int family) {
  const auto [host, port] = hostAndPort(entry);
  addrinfo hints{};
  hints.ai_family = family;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return {};
  std::vector<std::string> out;
  for (addrinfo* a = found; a; a = a->ai_next) {
    char text[NI_MAXHOST];
    if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof text, nullptr, 0, NI_NUMERICHOST))
      continue;
    const std::string address =
        family == AF_INET6 ? "[" + std::string(text) + "]:" + port : std::string(text) + ":" + port;
    if (std::find(out.begin(), out.end(), address) == out.end()) out.push_back(address);
  }
  ::freeaddrinfo(found);
  return out;
}

}  // namespace

ChannelTarget channelTarget(const std::string& servers) {
  if (servers.empty()) throw FieldError("server", "empty: expected HOST:PORT[,HOST:PORT...]");
  // A URI with a scheme ("dns:///name:port", "ipv4:a,b", "unix:/path"): gRPC's to resolve.
  const auto colon = servers.find(':');
  const std::string scheme = colon == std::string::npos ? "" : servers.substr(0, colon);
  if (scheme == "dns" || scheme == "ipv4" || scheme == "ipv6" || scheme == "unix" ||
      scheme == "unix-abstract" || servers.find("://") != std::string::npos)
    return {servers, ""};
  const std::vector<std::string> entries = splitAt(servers, ',');
  for (const std::string& e : entries) hostAndPort(e);  // each well formed
  if (entries.size() == 1) return {servers, ""};
  for (int family : {AF_INET, AF_INET6}) {
    std::string list;
    bool every = true;
    for (const std::string& e : entries) {
      const std::vector<std::string> found = addresses(e, family);
      if (found.empty()) every = false;
      for (const std::string& a : found) list += (list.empty() ? "" : ",") + a;
    }
    if (every) return {(family == AF_INET ? "ipv4:" : "ipv6:") + list, entries.front()};
  }
  for (const std::string& e : entries)
    if (addresses(e, AF_UNSPEC).empty())
      throw FieldError("server", "'" + e + "': the name does not resolve");
  throw FieldError("server", "'" + servers +
                                 "': its entries share no address family (IPv4 for all, or "
                                 "IPv6 for all); use a dns: name");
}

const std::string& clientServiceConfig() {
  static const std::string text = [] {
    const embedded::File* f = embedded::kServiceConfig.find("service_config.json");
    return f ? f->text() : std::string();
  }();
  return text;
}

std::shared_ptr<grpc::Channel> plannerChannel(
    const std::string& servers, const std::shared_ptr<grpc::ChannelCredentials>& creds,
    grpc::ChannelArguments args) {
  const ChannelTarget target = channelTarget(servers);
  args.SetServiceConfigJSON(clientServiceConfig());
  if (!target.authority.empty()) args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, target.authority);
  // A retried call is sent again from a copy: up to the largest request a server takes (16 MiB
  // unless configured) and more.
  args.SetInt(GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE, 32 << 20);
  return grpc::CreateCustomChannel(target.uri, creds, args);
}

}  // namespace marionette::service
