// Streams the packets of one capture file in constant memory.
//
// Classic pcap (microsecond or nanosecond stamps, either byte order) is read
// here with large sequential reads; pcapng files go through libpcap. A file
// that is cut short or corrupt ends the stream with damage(): the packets
// before it were delivered, the message says where and what.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xtk::capture {

struct Record {
  std::int64_t ts_ns = 0;              // capture time, CLOCK_REALTIME ns
  std::uint32_t caplen = 0;            // bytes at `data`
  std::uint32_t wirelen = 0;           // bytes the frame had on the wire
  const std::uint8_t* data = nullptr;  // valid until the next call to next() or next_batch()
};

class PcapReader {
 public:
  // Opens `path` ("-" = stdin, classic pcap only). Throws InputError for a
  // file that cannot be opened or is not a capture file at all.
  static std::unique_ptr<PcapReader> open(const std::string& path);
  // Reads a capture held in memory (tests, fuzzing); classic pcap only.
  static std::unique_ptr<PcapReader> from_bytes(std::string_view bytes, std::string name = "memory");
  virtual ~PcapReader() = default;

  // The next packet, or false at the end of the file or at damage.
  virtual bool next(Record& record) = 0;
  // Up to `max` next packets into `records` (0 at the end or at damage): one
  // virtual call per batch, not per packet. Their data stays valid together.
  virtual std::size_t next_batch(Record* records, std::size_t max) { return max > 0 && next(records[0]) ? 1 : 0; }
  // Why the stream ended early: "FILE: packet N at byte B: what"; nullopt after a clean end.
  const std::optional<std::string>& damage() const { return damage_; }

  std::uint32_t linktype() const { return linktype_; }
  std::uint32_t snaplen() const { return snaplen_; }
  const std::string& path() const { return path_; }
  std::uint64_t packets() const { return packets_; }  // delivered so far

 protected:
  PcapReader() = default;
  std::string path_;
  std::uint32_t linktype_ = 0, snaplen_ = 0;
  std::uint64_t packets_ = 0;
  std::optional<std::string> damage_;
};

}  // namespace xtk::capture
