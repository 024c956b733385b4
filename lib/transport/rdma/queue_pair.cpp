#include "transport/rdma/queue_pair.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace xtk::rdma {
namespace {

void put(unsigned char* at, std::uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) {
    at[i] = static_cast<unsigned char>(value & 0xff);
    value >>= 8;
  }
}

std::uint64_t get(const unsigned char* at, int bytes) {
  std::uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | at[i];
  return value;
}

constexpr std::uint8_t kVersion = 1;
// A request retried after 4.096 us x 2^14 = 67 ms without an answer, 7 times;
// "receiver not ready" retried forever (7): the receiver reposts as it goes.
constexpr std::uint8_t kTimeout = 14, kRetries = 7, kRnrRetries = 7, kMinRnrTimer = 12;

}  // namespace

Verb parse_verb(const std::string& text) {
  if (text == "write") return Verb::write_with_imm;
  if (text == "send") return Verb::send;
  throw UsageError(fmt::format("--verb: '{}' is neither write (RDMA WRITE with immediate) nor send", text));
}

QpInfoBytes encode(const QpInfo& info) {
  QpInfoBytes b{};
  put(&b[0], kQpInfoMagic, 4);
  b[4] = kVersion;
  b[5] = static_cast<std::uint8_t>(info.verb);
  b[6] = info.mtu;
  put(&b[8], info.qp_num, 4);
  put(&b[12], info.psn, 4);
  put(&b[16], info.lid, 2);
  put(&b[20], info.rkey, 4);
  put(&b[24], info.buffer_addr, 8);
  put(&b[32], info.buffer_bytes, 4);
  put(&b[36], info.receive_depth, 4);
  std::copy(info.gid.begin(), info.gid.end(), b.begin() + 40);
  return b;
}

std::optional<QpInfo> decode_qp_info(const QpInfoBytes& b, std::string* reason) {
  auto fail = [&](std::string why) -> std::optional<QpInfo> {
    if (reason != nullptr) *reason = std::move(why);
    return std::nullopt;
  };
  if (get(&b[0], 4) != kQpInfoMagic) {
    return fail("the peer did not answer with queue-pair details (is it an xtk-server with --transport rdma?)");
  }
  if (b[4] != kVersion)
    return fail(fmt::format("queue-pair details of version {}, this xtk speaks {}", b[4], kVersion));
  if (b[5] > static_cast<std::uint8_t>(Verb::send)) return fail(fmt::format("unknown verb {}", b[5]));
  if (b[6] < IBV_MTU_256 || b[6] > IBV_MTU_4096) return fail(fmt::format("unknown MTU code {}", b[6]));
  QpInfo info;
  info.verb = static_cast<Verb>(b[5]);
  info.mtu = b[6];
  info.qp_num = static_cast<std::uint32_t>(get(&b[8], 4));
  info.psn = static_cast<std::uint32_t>(get(&b[12], 4));
  info.lid = static_cast<std::uint16_t>(get(&b[16], 2));
  info.rkey = static_cast<std::uint32_t>(get(&b[20], 4));
  info.buffer_addr = get(&b[24], 8);
  info.buffer_bytes = static_cast<std::uint32_t>(get(&b[32], 4));
  info.receive_depth = static_cast<std::uint32_t>(get(&b[36], 4));
  std::copy(b.begin() + 40, b.begin() + 56, info.gid.begin());
  if (info.qp_num == 0 || info.qp_num > 0xffffff)
    return fail(fmt::format("queue pair number {} out of range", info.qp_num));
  if (info.receive_depth == 0) return fail("the peer keeps no receive requests posted");
  return info;
}

Transition to_init(const DeviceSettings& settings) {
  Transition t;
  t.attr.qp_state = IBV_QPS_INIT;
  t.attr.pkey_index = 0;
  t.attr.port_num = static_cast<std::uint8_t>(settings.port);
  t.attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  t.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  return t;
}

Transition to_rtr(const DeviceSettings& settings, const QpInfo& local, const QpInfo& peer) {
  Transition t;
  t.attr.qp_state = IBV_QPS_RTR;
  t.attr.path_mtu = static_cast<ibv_mtu>(std::min(local.mtu, peer.mtu));
  t.attr.dest_qp_num = peer.qp_num;
  t.attr.rq_psn = peer.psn;
  t.attr.max_dest_rd_atomic = 1;
  t.attr.min_rnr_timer = kMinRnrTimer;
  t.attr.ah_attr.dlid = peer.lid;
  t.attr.ah_attr.sl = static_cast<std::uint8_t>(settings.service_level);
  t.attr.ah_attr.src_path_bits = 0;
  t.attr.ah_attr.port_num = static_cast<std::uint8_t>(settings.port);
  if (settings.gid_index >= 0) {
    t.attr.ah_attr.is_global = 1;
    std::copy(peer.gid.begin(), peer.gid.end(), t.attr.ah_attr.grh.dgid.raw);
    t.attr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(settings.gid_index);
    t.attr.ah_attr.grh.hop_limit = 64;
    t.attr.ah_attr.grh.traffic_class = static_cast<std::uint8_t>(settings.traffic_class);
  }
  t.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
           IBV_QP_MIN_RNR_TIMER;
  return t;
}

Transition to_rts(const QpInfo& local) {
  Transition t;
  t.attr.qp_state = IBV_QPS_RTS;
  t.attr.timeout = kTimeout;
  t.attr.retry_cnt = kRetries;
  t.attr.rnr_retry = kRnrRetries;
  t.attr.sq_psn = local.psn;
  t.attr.max_rd_atomic = 1;
  t.mask =
      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
  return t;
}

std::uint32_t mtu_bytes(std::uint8_t mtu) { return 128U << mtu; }

}  // namespace xtk::rdma
