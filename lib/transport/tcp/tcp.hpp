// TCP, the first transport: a flow is its 56-byte header (docs/wire.md) and
// its payload on a connection that carries one flow at a time; a push flow
// ends with the server's 8-byte acknowledgement, a pull flow when its last
// byte arrives. DSCP and pacing are socket options set per flow.
#pragma once

#include <cstddef>
#include <memory>

#include "transport/transport.hpp"

namespace xtk::tcp {

// Sockets of ended connection-per-flow flows a client transport keeps open,
// each awaiting the server's close (docs/wire.md, "Who closes a connection").
// Past it the client closes the oldest itself.
inline constexpr std::size_t kMaxAwaitingClose = 4096;

// What one send() or recv() moves at most.
inline constexpr std::size_t kChunk = 1 << 18;
// What one connection moves in one turn of its worker's event loop before the
// others get theirs. On loopback and veth a send never fills the socket's
// buffer (it hands the bytes to the receiver itself), so a connection that
// sent until EAGAIN would hold its worker, and starve the others there, for as
// long as its flow lasts.
inline constexpr std::size_t kTurnBytes = kChunk;

std::unique_ptr<ClientTransport> make_client(const ChannelOptions& options, Poller& poller);
std::unique_ptr<ServerTransport> make_server(const ServerContext& context, Poller& poller);

}  // namespace xtk::tcp
