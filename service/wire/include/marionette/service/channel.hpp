// SPDX-License-Identifier: BSD-3-Clause
// How a client reaches one server or a fleet of them (docs/fleet.md).
//
// Contents
//   channelTarget()        a --server text ("host:port", "a:1,b:2,c:3", "dns:///name:port", any
//                          gRPC target URI) as the target a channel is made for.
//   clientServiceConfig()  the service config every client channel carries
//                          (proto/marionette/v1/service_config.json): round_robin over the
//                          addresses, health checking of "marionette.v1.Planner" (a server that
//                          says NOT_SERVING -- starting, overloaded, draining -- gets no calls),
//                          and retries on UNAVAILABLE for every Planner method, all idempotent (a
//                          seeded plan is deterministic), within the call's deadline.
//   plannerChannel()       a channel with both.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

namespace marionette::service {

struct ChannelTarget {
  std::string uri;        // what grpc::CreateChannel takes
  std::string authority;  // the :authority and TLS name to use ("" = the uri's own)
};
// A single "host:port" and any target with a scheme ("dns:///...", "ipv4:...", "unix:...") are
// passed to gRPC as they are (its resolver finds every address of a name).  A list
// "host:port,host:port,..." is resolved here, each name to all its addresses, into one
// "ipv4:" (or "ipv6:") address list; its authority is the first entry.  Throws FieldError
// ("server", ...) for an empty entry, a missing port, a name that does not resolve, or a list
// whose entries share no address family.
ChannelTarget channelTarget(const std::string& servers);

const std::string& clientServiceConfig();

// A channel to `servers` with clientServiceConfig() and `args` (retries may buffer a request of
// up to 32 MiB to send it again).
std::shared_ptr<grpc::Channel> plannerChannel(
    const std::string& servers, const std::shared_ptr<grpc::ChannelCredentials>& creds,
    grpc::ChannelArguments args = {});

}  // namespace marionette::service
