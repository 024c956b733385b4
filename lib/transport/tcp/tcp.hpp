// TCP, the first transport: a flow is its 56-byte header (docs/wire.md) and
// its payload on a connection that carries one flow at a time; a push flow
// ends with the server's 8-byte acknowledgement, a pull flow when its last
// byte arrives. DSCP and pacing are socket options set per flow.
#pragma once

#include <memory>

#include "transport/transport.hpp"

namespace xtk::tcp {

std::unique_ptr<ClientTransport> make_client(const ChannelOptions& options, Poller& poller);
std::unique_ptr<ServerTransport> make_server(const ServerContext& context, Poller& poller);

}  // namespace xtk::tcp
