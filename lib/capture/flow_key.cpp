#include "capture/flow_key.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

#include <charconv>

#include "core/error.hpp"

namespace xtk::capture {
namespace {

// What inet_ntop writes, without the sprintf it calls for IPv4: a trace
// names the addresses of every one of its (maybe millions of) flows.
std::string ipv4_text(const std::array<std::uint8_t, 16>& a) {
  char text[16];  // "255.255.255.255"
  char* p = std::to_chars(text, text + 3, a[0]).ptr;
  for (std::size_t i = 1; i < 4; ++i) {
    *p++ = '.';
    p = std::to_chars(p, p + 3, a[i]).ptr;
  }
  return std::string(text, p);
}

std::string address_text(const std::array<std::uint8_t, 16>& a, std::uint8_t family) {
  if (family == 4) return ipv4_text(a);
  char text[INET6_ADDRSTRLEN] = {};
  if (family == 6) {
    inet_ntop(AF_INET6, a.data(), text, sizeof text);
    return text;
  }
  return fmt::format("{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", a[0], a[1], a[2], a[3], a[4], a[5]);
}

// An address with its port, IPv6 in brackets so the colon before the port reads unambiguously.
std::string endpoint(const std::array<std::uint8_t, 16>& a, std::uint8_t family, std::uint16_t port) {
  if (family == 6) return fmt::format("[{}]:{}", address_text(a, family), port);
  return fmt::format("{}:{}", address_text(a, family), port);
}

}  // namespace

FlowKey FlowKey::direction() const {
  FlowKey d;
  d.src = src;
  d.dst = dst;
  d.family = family;
  d.kind = FlowKind::direction;
  return d;
}

std::string FlowKey::src_text() const { return kind == FlowKind::none ? "-" : address_text(src, family); }
std::string FlowKey::dst_text() const { return kind == FlowKind::none ? "-" : address_text(dst, family); }

std::string FlowKey::text() const {
  switch (kind) {
    case FlowKind::none:
      return "unknown";
    case FlowKind::ethernet:
      return fmt::format("eth type=0x{:04x} {}>{}", ethertype, src_text(), dst_text());
    case FlowKind::ip:
      if (protocol == 1) return fmt::format("icmp {}>{}", src_text(), dst_text());
      if (protocol == 58) return fmt::format("icmp6 {}>{}", src_text(), dst_text());
      return fmt::format("ip proto={} {}>{}", protocol, src_text(), dst_text());
    case FlowKind::tcp:
      return fmt::format("tcp {}>{}", endpoint(src, family, src_port), endpoint(dst, family, dst_port));
    case FlowKind::udp:
      return fmt::format("udp {}>{}", endpoint(src, family, src_port), endpoint(dst, family, dst_port));
    case FlowKind::roce:
      return fmt::format("roce qp=0x{:x} {}>{}", qp, src_text(), dst_text());
    case FlowKind::direction:
      return fmt::format("{} {}>{}", family == 0 ? "eth" : "ip", src_text(), dst_text());
  }
  return "unknown";
}

Address parse_address(const std::string& text) {
  Address a;
  if (inet_pton(AF_INET, text.c_str(), a.bytes.data()) == 1) {
    a.family = 4;
  } else if (inet_pton(AF_INET6, text.c_str(), a.bytes.data()) == 1) {
    a.family = 6;
  } else {
    throw UsageError(fmt::format("'{}' is not an IPv4 or IPv6 address", text));
  }
  return a;
}

}  // namespace xtk::capture
