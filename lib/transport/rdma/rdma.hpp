// RDMA, RC queue pairs with libibverbs: a channel is one queue pair and a TCP
// control connection to the server's address. Over the control connection the
// two ends exchange queue-pair details (queue_pair.hpp), then every flow's
// 56-byte header (docs/wire.md) goes first, and a push flow's acknowledgement
// comes back. The bytes go as RDMA WRITE with immediate (or SEND with
// immediate, --verb send) messages of --msg-size, --outstanding at a time;
// each message's immediate is its length, so the receiver counts each flow's
// end. Each worker has one device context, one completion queue (its channel
// in the worker's Poller) and one registered buffer that all its channels
// send from and receive into (the bytes are not looked at).
#pragma once

#include <memory>

#include "transport/transport.hpp"

namespace xtk::rdma {

std::unique_ptr<ClientTransport> make_client(const ChannelOptions& options, Poller& poller);
std::unique_ptr<ServerTransport> make_server(const ServerContext& context, Poller& poller);

}  // namespace xtk::rdma
