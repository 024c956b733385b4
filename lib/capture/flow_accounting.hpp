// Per-flow totals and per-bin series of dissected packets: what both trace
// analysis (xtk-analyze trace) and the live summarizer (xtk-log capture
// --summarize) keep. Bins go by flow or by direction (all packets from one
// address to another); the flow table is always per flow.
//
// Two halves: the flow table gives each packet its series, the series bins
// count it in its bin and write the rows.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "capture/binner.hpp"
#include "capture/dissector.hpp"
#include "capture/flow_index.hpp"

namespace xtk::capture {

enum class BinKey { flow, direction };
BinKey parse_bin_key(const std::string& text);  // "flow" or "direction"; UsageError otherwise
const char* bin_key_name(BinKey key);

struct FlowStats {
  std::int64_t first_ns = 0, last_ns = 0;  // first and last packet stamps
  std::uint64_t bytes = 0;                 // wire bytes
  std::uint64_t packets = 0;
  std::uint64_t ce_packets = 0;  // IP ECN field = CE (congestion experienced)
  std::uint32_t series = 0;      // the bin series it counts in
};

class FlowTable {
 public:
  // Called once per series, as its first packet is counted, with its
  // "flow,src,dst" text as the trace-bins file has it.
  using NewSeries = std::function<void(std::uint32_t series, std::string fields)>;
  FlowTable(BinKey per, NewSeries new_series);

  // Counts each packet in its flow's totals; series[i] gets packet i's bin
  // series. In stages: with many flows each packet's flow table slot, key
  // and totals miss the cache, and the misses of a batch then overlap
  // instead of following one another.
  void add_batch(const Packet* packets, const std::int64_t* stamps, std::size_t n, std::uint32_t* series) {
    constexpr std::size_t kStage = 32;  // lines prefetched at once: well within L1
    std::array<std::uint64_t, kStage> hashes;
    for (std::size_t first = 0; first < n; first += kStage) {
      const std::size_t count = std::min(kStage, n - first);
      const Packet* p = packets + first;
      for (std::size_t i = 0; i < count; ++i) {
        hashes[i] = p[i].key.hash();
        flows_.prefetch_slot(hashes[i]);
      }
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t index = flows_.candidate(hashes[i]);
        if (index != FlowIndex::kNone) {
          flows_.prefetch_key(index);
          __builtin_prefetch(&stats_[index]);
        }
      }
      for (std::size_t i = 0; i < count; ++i) series[first + i] = add(p[i], hashes[i], stamps[first + i]);
    }
  }
  std::uint32_t add(const Packet& packet, std::int64_t ts_ns) { return add(packet, packet.key.hash(), ts_ns); }

  std::size_t flow_count() const { return stats_.size(); }
  const FlowKey& key(std::size_t flow) const { return flows_.key(static_cast<std::uint32_t>(flow)); }
  const FlowStats& stats(std::size_t flow) const { return stats_[flow]; }

 private:
  std::uint32_t add(const Packet& packet, std::uint64_t hash, std::int64_t ts_ns) {
    bool added = false;
    const std::uint32_t index = flows_.find_or_add(packet.key, hash, added);
    if (added) new_flow(index, ts_ns);
    FlowStats& f = stats_[index];
    f.last_ns = ts_ns > f.last_ns ? ts_ns : f.last_ns;
    f.first_ns = ts_ns < f.first_ns ? ts_ns : f.first_ns;
    f.bytes += packet.wire_bytes;
    ++f.packets;
    f.ce_packets += packet.ecn == 3 ? 1 : 0;
    return f.series;
  }
  void new_flow(std::uint32_t index, std::int64_t ts_ns);

  BinKey per_;
  NewSeries new_series_;
  FlowIndex flows_;
  std::vector<FlowStats> stats_;
  FlowIndex directions_;
};

class SeriesBins {
 public:
  // `fields` is the series' "flow,src,dst" text.
  using BinSink = std::function<void(const BinRow& row, std::string_view fields)>;
  SeriesBins(std::int64_t bin_ns, std::int64_t reorder_ns, BinSink sink);

  void name(std::uint32_t series, std::string fields);  // before its first packet
  void add(std::uint32_t series, std::int64_t ts_ns, std::uint64_t bytes) { binner_.add(series, ts_ns, bytes); }
  void add_batch(const std::uint32_t* series, const std::int64_t* stamps, const std::uint64_t* bytes, std::size_t n) {
    constexpr std::size_t kAhead = 8;  // a series' newest bin is loaded this many packets ahead
    for (std::size_t i = 0; i < n; ++i) {
      if (i + kAhead < n) binner_.prefetch(series[i + kAhead]);
      binner_.add(series[i], stamps[i], bytes[i]);
    }
  }
  void finish() { binner_.finish(); }

  std::uint64_t late_packets() const { return binner_.late_packets(); }
  bool writes_rows() const { return static_cast<bool>(sink_); }  // else its series need no names

 private:
  void emit(const BinRow& row);

  BinSink sink_;
  std::vector<std::string> fields_;  // per series
  Binner binner_;
};

// Both halves on one thread, a packet at a time (the live summarizer).
class FlowAccounting {
 public:
  FlowAccounting(BinKey per, std::int64_t bin_ns, std::int64_t reorder_ns, SeriesBins::BinSink sink);

  void add(const Packet& packet, std::int64_t ts_ns) { bins_.add(table_.add(packet, ts_ns), ts_ns, packet.wire_bytes); }
  void finish() { bins_.finish(); }

  std::size_t flow_count() const { return table_.flow_count(); }
  std::uint64_t late_packets() const { return bins_.late_packets(); }

 private:
  SeriesBins bins_;
  FlowTable table_;
};

}  // namespace xtk::capture
