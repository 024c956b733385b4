// Hand-built frames and capture files for the capture tests: every header is
// written byte by byte here, so the tests check the dissector against the
// wire formats, not against itself.
#pragma once

#include <arpa/inet.h>

#include <cstdint>
#include <string>
#include <vector>

namespace xtk::capture::testing {

using Bytes = std::vector<std::uint8_t>;

inline void put16(Bytes& b, std::uint16_t v) {
  b.push_back(static_cast<std::uint8_t>(v >> 8));
  b.push_back(static_cast<std::uint8_t>(v));
}
inline void put24(Bytes& b, std::uint32_t v) {
  b.push_back(static_cast<std::uint8_t>(v >> 16));
  b.push_back(static_cast<std::uint8_t>(v >> 8));
  b.push_back(static_cast<std::uint8_t>(v));
}
inline void put32(Bytes& b, std::uint32_t v) {
  put16(b, static_cast<std::uint16_t>(v >> 16));
  put16(b, static_cast<std::uint16_t>(v));
}
inline void append(Bytes& b, const Bytes& more) { b.insert(b.end(), more.begin(), more.end()); }

inline Bytes mac(std::uint8_t last) { return {0x02, 0, 0, 0, 0, last}; }

// Ethernet header with optional VLAN tags (TPID 0x8100, then 0x88a8 outer for QinQ).
inline Bytes ethernet(std::uint16_t type, const std::vector<std::uint16_t>& vlans = {}, std::uint8_t src = 1,
                      std::uint8_t dst = 2) {
  Bytes b = mac(dst);
  append(b, mac(src));
  for (std::size_t i = 0; i < vlans.size(); ++i) {
    put16(b, i == 0 && vlans.size() > 1 ? 0x88a8 : 0x8100);
    put16(b, vlans[i]);
  }
  put16(b, type);
  return b;
}

inline Bytes ipv4(const char* src, const char* dst, std::uint8_t protocol, std::uint16_t payload, std::uint8_t tos = 0,
                  std::uint16_t fragment = 0, std::size_t option_words = 0) {
  Bytes b;
  b.push_back(static_cast<std::uint8_t>(0x40 | (5 + option_words)));
  b.push_back(tos);
  put16(b, static_cast<std::uint16_t>(20 + option_words * 4 + payload));
  put16(b, 0x1234);
  put16(b, fragment);
  b.push_back(64);
  b.push_back(protocol);
  put16(b, 0);
  std::uint8_t a[4];
  inet_pton(AF_INET, src, a);
  b.insert(b.end(), a, a + 4);
  inet_pton(AF_INET, dst, a);
  b.insert(b.end(), a, a + 4);
  for (std::size_t i = 0; i < option_words * 4; ++i) b.push_back(1);  // NOP options
  return b;
}

inline Bytes ipv6(const char* src, const char* dst, std::uint8_t next, std::uint16_t payload, std::uint8_t tclass = 0) {
  Bytes b;
  b.push_back(static_cast<std::uint8_t>(0x60 | (tclass >> 4)));
  b.push_back(static_cast<std::uint8_t>(tclass << 4));
  put16(b, 0);
  put16(b, payload);
  b.push_back(next);
  b.push_back(64);
  std::uint8_t a[16];
  inet_pton(AF_INET6, src, a);
  b.insert(b.end(), a, a + 16);
  inet_pton(AF_INET6, dst, a);
  b.insert(b.end(), a, a + 16);
  return b;
}

// An 8-byte IPv6 hop-by-hop (or destination options) header with PadN.
inline Bytes ipv6_options(std::uint8_t next) { return {next, 0, 1, 4, 0, 0, 0, 0}; }
inline Bytes ipv6_fragment(std::uint8_t next, std::uint16_t offset_units, bool more) {
  Bytes b{next, 0};
  put16(b, static_cast<std::uint16_t>((offset_units << 3) | (more ? 1 : 0)));
  put32(b, 0xabcd);
  return b;
}

inline Bytes tcp(std::uint16_t sport, std::uint16_t dport) {
  Bytes b;
  put16(b, sport);
  put16(b, dport);
  put32(b, 1);
  put32(b, 0);
  b.push_back(0x50);
  b.push_back(0x10);
  put16(b, 65535);
  put16(b, 0);
  put16(b, 0);
  return b;
}

inline Bytes udp(std::uint16_t sport, std::uint16_t dport, std::uint16_t payload) {
  Bytes b;
  put16(b, sport);
  put16(b, dport);
  put16(b, static_cast<std::uint16_t>(8 + payload));
  put16(b, 0);
  return b;
}

// InfiniBand base transport header (12 bytes) as RoCEv2 carries it.
inline Bytes bth(std::uint8_t opcode, std::uint32_t qp, std::uint32_t psn, bool becn = false) {
  Bytes b{opcode, 0x40};
  put16(b, 0xffff);
  b.push_back(becn ? 0x40 : 0);
  put24(b, qp);
  b.push_back(0x80);
  put24(b, psn);
  return b;
}

inline Bytes padded(Bytes b, std::size_t wire) {
  b.resize(std::max(b.size(), wire), 0);
  return b;
}

struct CapturedPacket {
  std::int64_t ts_ns;
  Bytes frame;         // the whole frame; the file keeps the first `snaplen` bytes
  std::uint32_t wire;  // 0: frame.size()
};

// A classic pcap file (microsecond or nanosecond stamps, either byte order).
inline std::string pcap_file(std::uint32_t linktype, const std::vector<CapturedPacket>& packets,
                             std::uint32_t snaplen = 65535, bool nano = true, bool swapped = false) {
  std::string out;
  auto u32 = [&](std::uint32_t v) {
    if (swapped) v = __builtin_bswap32(v);
    out.append(reinterpret_cast<const char*>(&v), 4);
  };
  auto u16 = [&](std::uint16_t v) {
    if (swapped) v = __builtin_bswap16(v);
    out.append(reinterpret_cast<const char*>(&v), 2);
  };
  u32(nano ? 0xa1b23c4d : 0xa1b2c3d4);
  u16(2);
  u16(4);
  u32(0);
  u32(0);
  u32(snaplen);
  u32(linktype);
  for (const auto& p : packets) {
    const auto caplen = static_cast<std::uint32_t>(std::min<std::size_t>(p.frame.size(), snaplen));
    u32(static_cast<std::uint32_t>(p.ts_ns / 1'000'000'000));
    const auto fraction = static_cast<std::uint32_t>(p.ts_ns % 1'000'000'000);
    u32(nano ? fraction : fraction / 1000);
    u32(caplen);
    u32(p.wire ? p.wire : static_cast<std::uint32_t>(p.frame.size()));
    out.append(reinterpret_cast<const char*>(p.frame.data()), caplen);
  }
  return out;
}

// A minimal pcapng file: section header, one interface (nanosecond stamps), enhanced packet blocks.
inline std::string pcapng_file(std::uint16_t linktype, const std::vector<CapturedPacket>& packets) {
  std::string out;
  auto u32 = [&](std::uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](std::uint16_t v) { out.append(reinterpret_cast<const char*>(&v), 2); };
  u32(0x0a0d0d0a);  // section header block
  u32(28);
  u32(0x1a2b3c4d);
  u16(1);
  u16(0);
  u32(0xffffffff);
  u32(0xffffffff);
  u32(28);
  u32(1);  // interface description block with if_tsresol = 9 (ns)
  u32(32);
  u16(linktype);
  u16(0);
  u32(0);
  u16(9);
  u16(1);
  out.push_back(9);
  out.append(3, '\0');
  u32(0);  // opt_endofopt
  u32(32);
  for (const auto& p : packets) {
    const auto caplen = static_cast<std::uint32_t>(p.frame.size());
    const std::uint32_t padded_len = (caplen + 3) & ~3u;
    const std::uint32_t total = 32 + padded_len;
    u32(6);
    u32(total);
    u32(0);
    const auto ts = static_cast<std::uint64_t>(p.ts_ns);
    u32(static_cast<std::uint32_t>(ts >> 32));
    u32(static_cast<std::uint32_t>(ts));
    u32(caplen);
    u32(p.wire ? p.wire : caplen);
    out.append(reinterpret_cast<const char*>(p.frame.data()), caplen);
    out.append(padded_len - caplen, '\0');
    u32(total);
  }
  return out;
}

}  // namespace xtk::capture::testing
