#include "capture/dissector.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace xtk::capture {
namespace {

constexpr std::uint16_t kEtherIpv4 = 0x0800;
constexpr std::uint16_t kEtherIpv6 = 0x86dd;
constexpr std::uint16_t kArphrdEther = 1;
constexpr std::size_t kEthernetHeader = 14;
constexpr int kMaxVlanTags = 4;
constexpr int kMaxIpv6Extensions = 8;
constexpr std::size_t kBthBytes = 12;

std::uint16_t be16(const std::uint8_t* p) { return static_cast<std::uint16_t>((p[0] << 8) | p[1]); }
std::uint32_t be24(const std::uint8_t* p) { return (std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | p[2]; }

// One frame's bytes with the bounds every read is checked against.
struct Frame {
  const std::uint8_t* data;
  std::size_t caplen;
  bool has(std::size_t offset, std::size_t bytes) const { return offset <= caplen && bytes <= caplen - offset; }
};

void transport(const Frame& f, std::size_t l4, std::uint8_t protocol, Packet& out) {
  out.key.protocol = protocol;
  out.key.kind = FlowKind::ip;
  if (protocol != 6 && protocol != 17) return;
  if (!f.has(l4, 4)) {
    out.problem = Problem::cut;
    return;
  }
  out.key.src_port = be16(f.data + l4);
  out.key.dst_port = be16(f.data + l4 + 2);
  out.key.kind = protocol == 6 ? FlowKind::tcp : FlowKind::udp;
  if (protocol != 17 || out.key.dst_port != kRoceV2Port) return;
  const std::size_t bth = l4 + 8;
  if (!f.has(bth, kBthBytes)) {
    out.problem = Problem::cut;
    return;
  }
  const std::uint8_t* b = f.data + bth;
  out.opcode = b[0];
  out.fecn = (b[4] & 0x80) != 0;
  out.becn = (b[4] & 0x40) != 0;
  out.psn = be24(b + 9);
  // The BTH has no source QP: a RoCE flow is (addresses, destination QP); the
  // UDP source port is only ECMP entropy.
  out.key.kind = FlowKind::roce;
  out.key.qp = be24(b + 5);
  out.key.src_port = 0;
  out.key.dst_port = 0;
}

// False when the header is not IPv4 (the caller keys the frame below IP).
bool ipv4(const Frame& f, std::size_t off, Packet& out) {
  if (!f.has(off, 20)) {
    out.problem = Problem::cut;
    return false;
  }
  const std::uint8_t* ip = f.data + off;
  const std::size_t header = std::size_t{ip[0] & 0x0fu} * 4;
  if ((ip[0] >> 4) != 4 || header < 20) {
    out.problem = Problem::malformed;
    return false;
  }
  out.ecn = ip[1] & 0x03u;
  out.key.family = 4;
  std::copy_n(ip + 12, 4, out.key.src.begin());
  std::copy_n(ip + 16, 4, out.key.dst.begin());
  out.key.protocol = ip[9];
  out.key.kind = FlowKind::ip;
  const std::uint16_t fragment = be16(ip + 6);
  if ((fragment & 0x3fffu) != 0) {  // more-fragments or an offset: ports only in the first piece
    out.fragment = true;
    return true;
  }
  if (!f.has(off, header)) {
    out.problem = Problem::cut;
    return true;
  }
  transport(f, off + header, ip[9], out);
  return true;
}

bool ipv6(const Frame& f, std::size_t off, Packet& out) {
  if (!f.has(off, 40)) {
    out.problem = Problem::cut;
    return false;
  }
  const std::uint8_t* ip = f.data + off;
  if ((ip[0] >> 4) != 6) {
    out.problem = Problem::malformed;
    return false;
  }
  out.ecn = (ip[1] >> 4) & 0x03u;
  out.key.family = 6;
  std::copy_n(ip + 8, 16, out.key.src.begin());
  std::copy_n(ip + 24, 16, out.key.dst.begin());
  out.key.kind = FlowKind::ip;
  std::uint8_t next = ip[6];
  std::size_t p = off + 40;
  for (int i = 0; i < kMaxIpv6Extensions; ++i) {
    out.key.protocol = next;
    if (next == 0 || next == 43 || next == 60 || next == 51) {  // hop-by-hop, routing, destination, AH
      if (!f.has(p, 2)) {
        out.problem = Problem::cut;
        return true;
      }
      const std::size_t length = next == 51 ? (f.data[p + 1] + 2u) * 4u : (f.data[p + 1] + 1u) * 8u;
      next = f.data[p];
      p += length;
    } else if (next == 44) {  // fragment
      if (!f.has(p, 8)) {
        out.problem = Problem::cut;
        return true;
      }
      const std::uint16_t offset_flags = be16(f.data + p + 2);
      next = f.data[p];
      p += 8;
      if ((offset_flags & 0xfff9u) != 0) {  // an offset or more fragments to come
        out.key.protocol = next;
        out.fragment = true;
        return true;
      }
    } else {
      transport(f, p, next, out);
      return true;
    }
  }
  out.key.protocol = next;
  return true;
}

void ethernet_key(const std::uint8_t* dst_mac, const std::uint8_t* src_mac, std::uint16_t type, Packet& out) {
  const Problem problem = out.problem;
  out.key = FlowKey{};
  out.key.kind = FlowKind::ethernet;
  // Below 0x0600 the field is an 802.3 length, not a type: all such frames are "type 0".
  out.key.ethertype = type >= 0x0600 ? type : 0;
  if (src_mac != nullptr) std::copy_n(src_mac, 6, out.key.src.begin());
  if (dst_mac != nullptr) std::copy_n(dst_mac, 6, out.key.dst.begin());
  out.problem = problem;
  out.ecn = 0;
  out.fragment = false;
}

// IP (by EtherType) at `off`, else the link-layer key.
void network(const Frame& f, std::size_t off, std::uint16_t type, const std::uint8_t* dst_mac,
             const std::uint8_t* src_mac, Packet& out) {
  bool ip = false;
  if (type == kEtherIpv4) ip = ipv4(f, off, out);
  if (type == kEtherIpv6) ip = ipv6(f, off, out);
  if (!ip) ethernet_key(dst_mac, src_mac, type, out);
}

void raw_ip(const Frame& f, std::uint32_t linktype, Packet& out) {
  std::uint16_t type = linktype == kLinkIpv4 ? kEtherIpv4 : linktype == kLinkIpv6 ? kEtherIpv6 : 0;
  if (type == 0 && f.has(0, 1)) type = (f.data[0] >> 4) == 6 ? kEtherIpv6 : kEtherIpv4;
  bool ip = false;
  if (type == kEtherIpv4) ip = ipv4(f, 0, out);
  if (type == kEtherIpv6) ip = ipv6(f, 0, out);
  if (!ip) {
    const Problem problem = out.problem == Problem::none ? Problem::malformed : out.problem;
    out = Packet{};
    out.problem = problem;
  }
}

}  // namespace

bool linktype_supported(std::uint32_t linktype) {
  switch (linktype) {
    case kLinkEthernet:
    case kLinkRaw:
    case kLinkDltRaw:
    case kLinkLinuxSll:
    case kLinkLinuxSll2:
    case kLinkIpv4:
    case kLinkIpv6:
      return true;
    default:
      return false;
  }
}

std::string linktype_name(std::uint32_t linktype) {
  switch (linktype) {
    case kLinkEthernet:
      return "Ethernet";
    case kLinkRaw:
    case kLinkDltRaw:
      return "raw IP";
    case kLinkLinuxSll:
      return "Linux cooked (SLL)";
    case kLinkLinuxSll2:
      return "Linux cooked v2 (SLL2)";
    case kLinkIpv4:
      return "raw IPv4";
    case kLinkIpv6:
      return "raw IPv6";
    default:
      return fmt::format("link type {}", linktype);
  }
}

void dissect(std::uint32_t linktype, const std::uint8_t* data, std::uint32_t caplen, std::uint32_t wirelen,
             Packet& out) {
  out = Packet{};
  out.wire_bytes = wirelen;
  const Frame f{data, caplen};
  switch (linktype) {
    case kLinkEthernet: {
      if (!f.has(0, kEthernetHeader)) {
        out.problem = Problem::cut;
        return;
      }
      std::size_t off = 12;
      std::uint16_t type = be16(data + off);
      for (int tags = 0; tags < kMaxVlanTags && (type == 0x8100 || type == 0x88a8 || type == 0x9100); ++tags) {
        if (!f.has(off, 6)) {
          out.problem = Problem::cut;
          ethernet_key(data, data + 6, type, out);
          return;
        }
        if (!out.tagged) out.vlan = be16(data + off + 2) & 0x0fffu;
        out.tagged = true;
        off += 4;
        type = be16(data + off);
      }
      network(f, off + 2, type, data, data + 6, out);
      return;
    }
    case kLinkLinuxSll:
    case kLinkLinuxSll2: {
      const bool v2 = linktype == kLinkLinuxSll2;
      const std::size_t header = v2 ? 20 : 16;
      if (!f.has(0, header)) {
        out.problem = Problem::cut;
        return;
      }
      const std::uint16_t hatype = be16(data + (v2 ? 8 : 2));
      const std::uint16_t type = be16(data + (v2 ? 0 : 14));
      const std::uint8_t* address = data + (v2 ? 12 : 6);
      // The cooked header is not on the wire; an Ethernet header was.
      const std::uint64_t l2 = hatype == kArphrdEther ? kEthernetHeader : 0;
      out.wire_bytes = wirelen >= header ? wirelen - header + l2 : 0;
      const std::uint64_t wire = out.wire_bytes;
      network(f, header, type, nullptr, address, out);
      out.wire_bytes = wire;
      return;
    }
    case kLinkRaw:
    case kLinkDltRaw:
    case kLinkIpv4:
    case kLinkIpv6:
      raw_ip(f, linktype, out);
      out.wire_bytes = wirelen;
      return;
    default:
      return;
  }
}

}  // namespace xtk::capture
