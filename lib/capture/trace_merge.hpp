// Several capture files read as one stream in time order: rotated files one
// after another, captures of several interfaces interleaved. Files are
// opened when the merge reaches their first packet, so a rotation of
// thousands of files holds only the few that overlap open.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/pcap_reader.hpp"

namespace xtk::capture {

class TraceMerge {
 public:
  // Reads the first packet of every file to order them. Throws InputError
  // for a file that is not a capture or whose link type is not dissected.
  explicit TraceMerge(const std::vector<std::string>& paths);

  // The next packet of all files in time order, its file's link type beside it.
  bool next(Record& record, std::uint32_t& linktype);
  // Up to `max` next packets, all of one file (0 at the end): whole batches
  // once a single file is left to read, else one packet.
  std::size_t next_batch(Record* records, std::size_t max, std::uint32_t& linktype);
  // The first damage met: the merge stops there (nullopt after a clean end).
  const std::optional<std::string>& damage() const { return damage_; }
  // Timestamp of the earliest first packet of all files (0 when all are empty).
  std::int64_t first_ts_ns() const { return first_ts_ns_; }
  std::vector<std::uint32_t> linktypes() const;
  std::uint32_t max_snaplen() const { return max_snaplen_; }

 private:
  struct Source {
    std::string path;
    std::int64_t first_ts_ns = 0;
    std::uint32_t linktype = 0;
    std::unique_ptr<PcapReader> reader;  // open while the merge is inside this file
    Record current;
  };
  bool advance(Source& source);  // reads its next packet; false at its end or damage
  void close(Source& source);    // at its end or damage

  std::vector<Source> sources_;  // sorted by first packet
  std::size_t next_to_open_ = 0;
  std::vector<Source*> open_;
  Source* last_ = nullptr;  // delivered last; advanced on the next call
  std::optional<std::string> damage_;
  std::int64_t first_ts_ns_ = 0;
  std::uint32_t max_snaplen_ = 0;
};

}  // namespace xtk::capture
