// Trace analysis: capture files in, per-flow totals, per-bin series (by flow
// or direction) and the injection-rate series and histogram out, streaming
// the files in constant memory (the flow table grows with flows, not packets).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capture/flow_accounting.hpp"
#include "capture/flow_key.hpp"
#include "capture/rate_series.hpp"

namespace xtk::capture {

// A --from/--to bound: a duration from the trace's first packet ("2s"), or
// an absolute CLOCK_REALTIME stamp in ns after '@' ("@1764126000000000000").
struct TimeBound {
  std::int64_t ns = 0;
  bool absolute = false;
};
TimeBound parse_time_bound(const std::string& text, std::string_view flag);

struct TraceOptions {
  std::vector<std::string> files;
  std::int64_t bin_ns = 1'000'000;
  BinKey per = BinKey::flow;
  std::int64_t reorder_ns = 100'000'000;
  std::optional<TimeBound> from, to;
  std::vector<Address> hosts, srcs, dsts;  // keep packets from/to any `hosts`, from `srcs`, to `dsts`
  std::string filter;                      // BPF, as tcpdump takes it
  std::size_t smooth_bins = 1;
  double histogram_step_bps = 0;  // 0: automatic
  std::string bins_path;          // xtk-trace-bins output; empty: none
  std::string series_path;        // xtk-trace-series output; empty: none
};

struct FlowRow {
  std::string flow, src, dst;
  FlowStats stats;
  double mean_bps = 0;  // bytes x 8 / (last - first); 0 for a single packet
};

struct TraceResult {
  std::vector<std::string> files;
  std::vector<std::uint32_t> linktypes;
  std::uint32_t snaplen = 0;
  std::uint64_t packets_read = 0, bytes_read = 0;  // every record read (wire lengths)
  std::int64_t trace_first_ns = 0, trace_last_ns = 0;
  std::int64_t window_from_ns = 0, window_to_ns = 0;  // the window applied (the trace's span when none)
  std::uint64_t packets = 0, bytes = 0;               // selected: in the window and through the filters
  std::int64_t first_ns = 0, last_ns = 0;             // of the selected packets
  std::uint64_t not_ip = 0, cut = 0, malformed = 0, fragments = 0, late = 0;
  std::optional<std::string> damage;
  std::vector<FlowRow> flows;  // by bytes, largest first
  // The injection rate of the selected packets.
  std::int64_t bin_ns = 0;
  std::size_t smooth_bins = 1;
  std::uint64_t rate_bins = 0;
  double rate_mean_bps = 0, rate_p50_bps = 0, rate_p99_bps = 0, rate_max_bps = 0;  // smoothed
  std::vector<RateHistogram::Bucket> histogram;
};

// Throws InputError for unreadable files, UsageError for a bad filter;
// damage inside a file ends the analysis there with `damage` set.
TraceResult analyze_trace(const TraceOptions& options);

}  // namespace xtk::capture
