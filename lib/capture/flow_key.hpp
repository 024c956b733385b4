// What identifies a flow in a packet trace, and how it is written.
//
// TCP and UDP flows are 5-tuples, one per direction; RoCEv2 flows (UDP 4791)
// are keyed by destination queue pair and addresses, since the BTH carries no
// source QP; other IP traffic by protocol and addresses; frames that are not
// IP by EtherType and MAC addresses. The text form is what files carry:
//
//   tcp 10.77.0.1:40000>10.77.0.2:7000      udp [fd77::1]:5353>[fd77::2]:53
//   roce qp=0x12 10.0.0.1>10.0.0.2          icmp 10.77.0.1>10.77.0.2
//   ip proto=47 10.0.0.1>10.0.0.2           eth type=0x0806 02:00:00:00:00:01>ff:ff:ff:ff:ff:ff
//   ip 10.77.0.1>10.77.0.2                  (a direction: every packet from one host to another)
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

namespace xtk::capture {

enum class FlowKind : std::uint8_t {
  none,      // nothing usable (an unknown link type or a cut header)
  ethernet,  // not IP: EtherType and MACs
  ip,        // IP without ports: other protocols, fragments, cut transport headers
  tcp,
  udp,
  roce,       // RoCEv2: UDP to port 4791 with a BTH
  direction,  // aggregate of everything from one address to another
};

inline constexpr std::uint16_t kRoceV2Port = 4791;

// Plain bytes with no padding, so equality and hashing work on the raw memory.
struct FlowKey {
  std::array<std::uint8_t, 16> src{}, dst{};  // IPv4 in the first 4 bytes, a MAC in the first 6
  std::uint32_t qp = 0;                       // RoCE destination QP (24 bits)
  std::uint16_t src_port = 0, dst_port = 0;
  std::uint16_t ethertype = 0;  // FlowKind::ethernet only
  FlowKind kind = FlowKind::none;
  std::uint8_t protocol = 0;  // IP protocol number
  std::uint8_t family = 0;    // 4, 6, or 0 for MAC addresses
  std::uint8_t reserved[3] = {0, 0, 0};

  bool operator==(const FlowKey& other) const { return std::memcmp(this, &other, sizeof(FlowKey)) == 0; }
  std::uint64_t hash() const;  // inline below: it runs once per packet

  // The key of every packet from this key's source host to its destination host.
  FlowKey direction() const;

  std::string text() const;      // "tcp 10.77.0.1:40000>10.77.0.2:7000"
  std::string src_text() const;  // the source address alone ("10.77.0.1", "fd77::1", a MAC, "-")
  std::string dst_text() const;
};
static_assert(sizeof(FlowKey) == 48, "FlowKey must have no padding");

namespace detail {
// The 128-bit product of a and b folded to 64 bits: a strong, cheap mix.
inline std::uint64_t fold_multiply(std::uint64_t a, std::uint64_t b) {
  __extension__ using U128 = unsigned __int128;
  const U128 product = static_cast<U128>(a) * b;
  return static_cast<std::uint64_t>(product) ^ static_cast<std::uint64_t>(product >> 64);
}
inline std::uint64_t load64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  return v;
}
}  // namespace detail

// The six words multiplied in three independent pairs (as wyhash does), so
// the CPU overlaps them instead of chaining six multiply steps.
inline std::uint64_t FlowKey::hash() const {
  using detail::fold_multiply;
  using detail::load64;
  const auto* p = reinterpret_cast<const std::uint8_t*>(this);
  const std::uint64_t a = fold_multiply(load64(p) ^ 0xa0761d6478bd642fULL, load64(p + 8) ^ 0xe7037ed1a0b428dbULL);
  const std::uint64_t b = fold_multiply(load64(p + 16) ^ 0x8ebc6af09c88c6e3ULL, load64(p + 24) ^ 0x589965cc75374cc3ULL);
  const std::uint64_t c = fold_multiply(load64(p + 32) ^ 0x1d8e4e27c47d124fULL, load64(p + 40) ^ 0x9e3779b97f4a7c15ULL);
  return fold_multiply(a ^ b ^ c, 0xbf58476d1ce4e5b9ULL);
}

// An address as the text names it: IPv4, IPv6 (stored as family 4 / 6).
struct Address {
  std::array<std::uint8_t, 16> bytes{};
  std::uint8_t family = 0;
  bool matches_src(const FlowKey& key) const { return key.family == family && key.src == bytes; }
  bool matches_dst(const FlowKey& key) const { return key.family == family && key.dst == bytes; }
};
// Throws UsageError naming `text` when it is neither an IPv4 nor an IPv6 address.
Address parse_address(const std::string& text);

}  // namespace xtk::capture
