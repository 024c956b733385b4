// libFuzzer target: the packet dissector and the pcap reader on arbitrary bytes.
//
// The first byte picks what the rest is: below 0x80, one frame of the link
// type it selects (a snaplen from the second byte); from 0x80 up, a whole
// pcap file whose records are dissected in turn. Nothing may read outside
// the bytes given (ASan), keys must stay consistent, and the reader may only
// end in damage or an InputError. Run through scripts/fuzz.sh.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "capture/dissector.hpp"
#include "capture/pcap_reader.hpp"
#include "core/error.hpp"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

constexpr std::uint32_t kLinktypes[] = {
    xtk::capture::kLinkEthernet,  xtk::capture::kLinkRaw,  xtk::capture::kLinkDltRaw, xtk::capture::kLinkLinuxSll,
    xtk::capture::kLinkLinuxSll2, xtk::capture::kLinkIpv4, xtk::capture::kLinkIpv6,   105};

void dissect_checked(std::uint32_t linktype, const std::uint8_t* data, std::uint32_t caplen, std::uint32_t wirelen) {
  using namespace xtk::capture;
  Packet p;
  dissect(linktype, data, caplen, wirelen, p);
  check(p.wire_bytes <= static_cast<std::uint64_t>(wirelen) + 14);
  check(p.key.family == 0 || p.key.family == 4 || p.key.family == 6);
  check(p.key.kind != FlowKind::roce || p.key.protocol == 17);
  check(p.key.kind != FlowKind::tcp || p.key.protocol == 6);
  check((p.key.kind == FlowKind::ethernet || p.key.kind == FlowKind::none) == (p.key.family == 0));
  check(p.key.qp < (1u << 24) && p.psn < (1u << 24));
  // Formatting and the direction key must work on whatever was found.
  volatile std::size_t sink = p.key.text().size() + p.key.src_text().size() + p.key.direction().text().size();
  (void)sink;
  Packet again;
  dissect(linktype, data, caplen, wirelen, again);
  check(again.key == p.key && again.key.hash() == p.key.hash());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  if (data[0] < 0x80) {
    const std::uint32_t linktype = kLinktypes[data[0] % (sizeof kLinktypes / sizeof kLinktypes[0])];
    const std::uint8_t* frame = data + 2;
    const auto length = static_cast<std::uint32_t>(size - 2);
    // The frame's own copy, exactly as long as the captured part, so ASan sees any overread.
    const std::uint32_t caplen = data[1] == 0 ? length : std::min<std::uint32_t>(length, data[1]);
    std::vector<std::uint8_t> captured(frame, frame + caplen);
    dissect_checked(linktype, captured.data(), caplen, length);
    return 0;
  }
  try {
    auto reader = xtk::capture::PcapReader::from_bytes(
        std::string_view(reinterpret_cast<const char*>(data + 1), size - 1), "fuzz");
    xtk::capture::Record r;
    std::int64_t count = 0;
    while (reader->next(r)) {
      check(r.caplen <= r.wirelen);
      std::vector<std::uint8_t> captured(r.data, r.data + r.caplen);
      dissect_checked(reader->linktype(), captured.data(), r.caplen, r.wirelen);
      ++count;
    }
    check(static_cast<std::uint64_t>(count) == reader->packets());
  } catch (const xtk::Error&) {
    // Not a capture file at all: the expected outcome for most bytes.
  }
  return 0;
}
