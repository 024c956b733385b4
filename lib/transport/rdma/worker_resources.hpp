// What every RDMA channel of one worker shares: the device, the completion
// queue, the registered buffer, a random first packet sequence number per
// queue pair, and posting helpers.
#pragma once

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <memory>
#include <random>

#include "transport/rdma/device.hpp"
#include "transport/rdma/queue_pair.hpp"

namespace xtk::rdma {

struct WorkerResources {
  DeviceSettings settings;
  Device device;
  CompletionQueue completions;
  RegisteredBuffer buffer;  // --msg-size bytes: every message comes from or lands in it
  std::mt19937 random{std::random_device{}()};

  WorkerResources(const DeviceSettings& s, Poller& poller)
      : settings(s),
        device(s),
        completions(device, poller, static_cast<int>(8 * s.outstanding + 64)),
        buffer(device, s.message_bytes) {}

  // This end's details for a new queue pair.
  QpInfo describe(ibv_qp* qp, Verb verb) {
    QpInfo info;
    device.describe(info);
    info.verb = verb;
    info.qp_num = qp->qp_num;
    info.psn = random() & 0xffffff;
    info.rkey = buffer.rkey();
    info.buffer_addr = reinterpret_cast<std::uintptr_t>(buffer.data());
    info.buffer_bytes = static_cast<std::uint32_t>(buffer.size());
    info.receive_depth = settings.outstanding;
    return info;
  }

  // A receive request for one message (a WRITE with immediate consumes it too).
  int post_receive(ibv_qp* qp, std::uint64_t id) {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buffer.data()), static_cast<std::uint32_t>(buffer.size()),
                buffer.lkey()};
    ibv_recv_wr wr{};
    wr.wr_id = id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(qp, &wr, &bad);
  }

  // One message of `bytes` to the peer, its length as the immediate.
  int post_message(ibv_qp* qp, std::uint64_t id, Verb verb, const QpInfo& peer, std::uint32_t bytes) {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(buffer.data()), bytes, buffer.lkey()};
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(bytes);
    if (verb == Verb::send) {
      wr.opcode = IBV_WR_SEND_WITH_IMM;
    } else {
      wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
      wr.wr.rdma.remote_addr = peer.buffer_addr;
      wr.wr.rdma.rkey = peer.rkey;
    }
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
  }
};

// The message size and window towards `peer`: within its buffer and its posted receives.
inline std::uint32_t message_bytes_to(const DeviceSettings& s, const QpInfo& peer) {
  return std::min(s.message_bytes, peer.buffer_bytes);
}
inline std::uint32_t window_to(const DeviceSettings& s, const QpInfo& peer) {
  return std::min(s.outstanding, peer.receive_depth);
}

// A completion that carries a received message: its length is the immediate.
inline bool is_receive(const ibv_wc& wc) { return wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM || wc.opcode == IBV_WC_RECV; }
inline std::uint32_t received_bytes(const ibv_wc& wc) { return ntohl(wc.imm_data); }

}  // namespace xtk::rdma
