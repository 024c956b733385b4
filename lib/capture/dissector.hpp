// Packet dissector: Ethernet (with VLAN / QinQ tags), Linux cooked captures
// (SLL, SLL2) and raw IP; IPv4 (options, fragments), IPv6 (extension headers,
// fragments); TCP, UDP and RoCEv2 (UDP 4791: BTH opcode, destination QP, PSN).
//
// It reads only the captured bytes (a snaplen of 128 covers every header it
// needs) and never fails: a frame it cannot follow to the end keys at the
// deepest layer it understood and says why in `problem`.
#pragma once

#include <cstdint>
#include <string>

#include "capture/flow_key.hpp"

namespace xtk::capture {

// pcap LINKTYPE_ values this dissector reads.
inline constexpr std::uint32_t kLinkEthernet = 1;
inline constexpr std::uint32_t kLinkRaw = 101;
inline constexpr std::uint32_t kLinkDltRaw = 12;  // what libpcap reports for raw IP on Linux
inline constexpr std::uint32_t kLinkLinuxSll = 113;
inline constexpr std::uint32_t kLinkLinuxSll2 = 276;
inline constexpr std::uint32_t kLinkIpv4 = 228;
inline constexpr std::uint32_t kLinkIpv6 = 229;

bool linktype_supported(std::uint32_t linktype);
// "Ethernet", "Linux cooked (SLL)", ... or "link type N".
std::string linktype_name(std::uint32_t linktype);

enum class Problem : std::uint8_t {
  none,
  cut,        // the capture ends inside a header (snaplen too small)
  malformed,  // a header that cannot be right (bad IP version, header length)
};

struct Packet {
  FlowKey key;
  // Bytes of the frame on the wire without FCS, from the record's original
  // length (not the captured length); a cooked (SLL) header is replaced by
  // the 14-byte Ethernet header it stands for.
  std::uint64_t wire_bytes = 0;
  Problem problem = Problem::none;
  bool fragment = false;   // an IP fragment: keyed without ports
  std::uint8_t ecn = 0;    // the IP header's ECN field; 3 = congestion experienced
  std::uint16_t vlan = 0;  // outermost VLAN id, when tagged
  bool tagged = false;
  // RoCEv2 BTH fields (key.kind == roce).
  std::uint8_t opcode = 0;
  std::uint32_t psn = 0;
  bool fecn = false, becn = false;
};

// Dissects one captured frame of `linktype`: `caplen` bytes at `data` of a
// frame `wirelen` bytes long. `out` is overwritten.
void dissect(std::uint32_t linktype, const std::uint8_t* data, std::uint32_t caplen, std::uint32_t wirelen,
             Packet& out);

}  // namespace xtk::capture
