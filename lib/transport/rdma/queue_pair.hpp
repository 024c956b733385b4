// What the two ends of an RDMA channel tell each other over its TCP control
// connection before any flow (docs/rdma.md, "Queue-pair exchange"), and the
// queue-pair attributes each state transition takes, built from the settings
// and the peer's details. No device is needed for either.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "transport/transport.hpp"

namespace xtk::rdma {

enum class Verb : std::uint8_t { write_with_imm = 0, send = 1 };
// "write" or "send"; throws UsageError naming --verb.
Verb parse_verb(const std::string& text);

struct QpInfo {
  Verb verb = Verb::write_with_imm;  // the client's choice; the server follows it
  std::uint8_t mtu = IBV_MTU_1024;   // the port's active MTU (enum ibv_mtu)
  std::uint32_t qp_num = 0, psn = 0;
  std::uint16_t lid = 0;
  std::array<std::uint8_t, 16> gid{};  // all zero: address by LID
  std::uint32_t rkey = 0;              // of the receive buffer the peer may write into
  std::uint64_t buffer_addr = 0;
  std::uint32_t buffer_bytes = 0;
  std::uint32_t receive_depth = 0;  // receive requests it keeps posted: the peer's window

  bool operator==(const QpInfo&) const = default;
};

inline constexpr std::size_t kQpInfoBytes = 64;
inline constexpr std::uint32_t kQpInfoMagic = 0x58544B52;  // "XTKR"
using QpInfoBytes = std::array<unsigned char, kQpInfoBytes>;

QpInfoBytes encode(const QpInfo& info);
// nullopt and a reason when the bytes are not this version's details (a peer
// without RDMA, say, that answered something else).
std::optional<QpInfo> decode_qp_info(const QpInfoBytes& bytes, std::string* reason);

struct Transition {
  ibv_qp_attr attr{};
  int mask = 0;
};

Transition to_init(const DeviceSettings& settings);
// Ready to receive from `peer`, over the lower of the two ports' MTUs; with a
// GID index (RoCE, or routed InfiniBand) through a GRH carrying the traffic class.
Transition to_rtr(const DeviceSettings& settings, const QpInfo& local, const QpInfo& peer);
Transition to_rts(const QpInfo& local);

// Bytes of the MTU enum (IBV_MTU_1024 -> 1024).
std::uint32_t mtu_bytes(std::uint8_t mtu);

}  // namespace xtk::rdma
