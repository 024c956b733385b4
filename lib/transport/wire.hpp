// The flow framing on the wire (docs/wire.md). Every flow on a TCP connection
// starts with a fixed 56-byte header from the client, all fields big-endian:
//
//   0  u32 magic      "XTKF"
//   4  u8  version    3
//   5  u8  direction  0 push (client sends size bytes), 1 pull (server sends them)
//   6  u8  flags      bit 0: stream (size is ignored; data flows until the sender closes)
//                      bit 1: last (the server closes the connection after this flow)
//   7  u8  dscp       0-63: the server marks its side of the flow with it
//   8  u64 flow_id
//  16  u64 size_bytes
//  24  u64 token      pre-shared token, 0 when the server requires none
//  32  u64 rate_bps   pull: the server paces its sending to this, 0 = no cap
//  40  16 bytes cc    pull: the server's TCP congestion control, ASCII, NUL-padded; empty = its default
//
// After a push flow the server answers with an 8-byte acknowledgement (the
// flow id, big-endian) so the client can stamp the end. A connection carries
// one flow at a time and may carry many in turn.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace xtk {

inline constexpr std::uint32_t kFlowMagic = 0x58544B46;  // "XTKF"
inline constexpr std::uint8_t kWireVersion = 3;
inline constexpr std::size_t kFlowHeaderBytes = 56;
inline constexpr std::size_t kAckBytes = 8;

enum class Direction : std::uint8_t { push = 0, pull = 1 };

struct FlowHeader {
  Direction direction = Direction::push;
  bool stream = false;
  // The connection's last flow: the server closes it once the flow is done,
  // so TIME_WAIT stays on the server and the client's port is free at once.
  bool last = false;
  std::uint64_t flow_id = 0;
  std::uint64_t size_bytes = 0;
  std::uint64_t token = 0;
  int dscp = 0;                    // 0-63
  std::uint64_t rate_bps = 0;      // the server's pacing cap for a pull flow, 0 = none
  std::string congestion_control;  // the server's for a pull flow; empty = its default
};

using HeaderBytes = std::array<unsigned char, kFlowHeaderBytes>;
using AckBytes = std::array<unsigned char, kAckBytes>;

HeaderBytes encode(const FlowHeader& header);
// nullopt and a reason when the bytes are not a valid header of this version.
std::optional<FlowHeader> decode(const HeaderBytes& bytes, std::string* reason);

AckBytes encode_ack(std::uint64_t flow_id);
std::uint64_t decode_ack(const AckBytes& bytes);

// A 64-bit token from a pass phrase (FNV-1a), so users type words, not numbers.
std::uint64_t token_from_phrase(const std::string& phrase);

}  // namespace xtk
