#include "transport/wire.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/units.hpp"

namespace xtk {
namespace {

void put_u64(unsigned char* p, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) {
    p[i] = static_cast<unsigned char>(v & 0xff);
    v >>= 8;
  }
}

std::uint64_t get_u64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

HeaderBytes encode(const FlowHeader& header) {
  HeaderBytes b{};
  b[0] = 'X';
  b[1] = 'T';
  b[2] = 'K';
  b[3] = 'F';
  b[4] = kWireVersion;
  b[5] = static_cast<unsigned char>(header.direction);
  b[6] = static_cast<unsigned char>((header.stream ? 1U : 0U) | (header.last ? 2U : 0U));
  b[7] = static_cast<unsigned char>(header.dscp);
  put_u64(&b[8], header.flow_id);
  put_u64(&b[16], header.size_bytes);
  put_u64(&b[24], header.token);
  put_u64(&b[32], header.rate_bps);
  std::copy_n(header.congestion_control.begin(), std::min(header.congestion_control.size(), kCongestionControlNameMax),
              &b[40]);
  return b;
}

std::optional<FlowHeader> decode(const HeaderBytes& b, std::string* reason) {
  const auto fail = [&](std::string why) -> std::optional<FlowHeader> {
    if (reason) *reason = std::move(why);
    return std::nullopt;
  };
  const std::uint32_t magic =
      (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
  if (magic != kFlowMagic) return fail(fmt::format("bad magic 0x{:08x}", magic));
  if (b[4] != kWireVersion) return fail(fmt::format("wire version {} (this xtk speaks {})", b[4], kWireVersion));
  if (b[5] > 1) return fail(fmt::format("bad direction {}", b[5]));
  if ((b[6] & ~3U) != 0) return fail("unknown flags");
  if (b[7] > 63) return fail(fmt::format("dscp {} is above 63", b[7]));
  FlowHeader h;
  h.direction = static_cast<Direction>(b[5]);
  h.stream = (b[6] & 1U) != 0;
  h.last = (b[6] & 2U) != 0;
  h.dscp = b[7];
  h.rate_bps = get_u64(&b[32]);
  const auto* cc = reinterpret_cast<const char*>(&b[40]);
  h.congestion_control.assign(cc, std::find(cc, cc + 16, '\0'));
  if (!valid_congestion_control(h.congestion_control) ||
      std::any_of(cc + h.congestion_control.size(), cc + 16, [](char c) { return c != '\0'; })) {
    return fail("bad congestion control name");
  }
  h.flow_id = get_u64(&b[8]);
  h.size_bytes = get_u64(&b[16]);
  h.token = get_u64(&b[24]);
  return h;
}

AckBytes encode_ack(std::uint64_t flow_id) {
  AckBytes a{};
  put_u64(a.data(), flow_id);
  return a;
}

std::uint64_t decode_ack(const AckBytes& bytes) { return get_u64(bytes.data()); }

std::uint64_t token_from_phrase(const std::string& phrase) {
  if (phrase.empty()) return 0;
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : phrase) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h == 0 ? 1 : h;
}

}  // namespace xtk
