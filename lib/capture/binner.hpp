// Bytes and packets per series (a flow, a direction) per time bin, streamed:
// bins leave in time order once they are older than the newest packet by
// more than a reorder window, so memory holds only the open bins, never the
// whole trace. Captures are nearly in time order (merged files, packets
// stamped on several CPUs); a packet older than every open bin is counted as
// late and added to the oldest open bin, keeping byte totals exact.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

namespace xtk::capture {

struct BinRow {
  std::int64_t bin_start_ns = 0;  // a multiple of the bin width (epoch-aligned)
  std::uint32_t series = 0;
  std::uint64_t bytes = 0;
  std::uint64_t packets = 0;
};

class Binner {
 public:
  // Rows reach `sink` sorted by bin, then by series, one per (bin, series)
  // that saw a packet.
  Binner(std::int64_t bin_ns, std::int64_t reorder_ns, std::function<void(const BinRow&)> sink);

  void add(std::uint32_t series, std::int64_t ts_ns, std::uint64_t bytes);
  // Starts loading what add() reads of this series.
  void prefetch(std::uint32_t series) const {
    if (series < latest_.size()) __builtin_prefetch(&latest_[series]);
  }
  void finish();  // emits every open bin

  std::int64_t bin_ns() const { return bin_ns_; }
  std::uint64_t late_packets() const { return late_; }

 private:
  struct Entry {
    std::uint32_t series;
    std::uint32_t packets;
    std::uint64_t bytes;
  };
  struct Latest {  // where a series' newest bin entry is, to skip the search
    std::int64_t bin = INT64_MIN;
    std::uint32_t slot = 0;
  };
  std::int64_t newest() const { return front_ + static_cast<std::int64_t>(bins_.size()) - 1; }
  // Moves the open bins for a packet of `bin`; returns the bin it counts in.
  std::int64_t place(std::int64_t bin);
  void emit_front();
  void open_bins_through(std::int64_t bin);

  std::int64_t bin_ns_;
  std::int64_t reorder_bins_;
  std::function<void(const BinRow&)> sink_;
  std::deque<std::vector<Entry>> bins_;  // bins_[i] is bin front_ + i
  std::vector<Entry> spare_;             // the last emitted bin's storage, empty
  std::int64_t front_ = 0;
  std::int64_t last_emitted_ = INT64_MIN;  // the newest bin whose rows have left
  std::vector<Latest> latest_;
  std::uint64_t late_ = 0;
  // The newest open bin, so that packets falling in it need no division:
  // its storage (nullptr when no bin is open) and where it starts, in ns.
  std::vector<Entry>* newest_entries_ = nullptr;
  std::int64_t newest_start_ns_ = 0;
};

inline std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

}  // namespace xtk::capture
