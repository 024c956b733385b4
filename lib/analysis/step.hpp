// One step directory read into what the tables need: the iteration times of
// the job, the cross-traffic load measured while it ran, and (from trace
// bins) each training node's bandwidth.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/run_dir.hpp"
#include "analysis/stragglers.hpp"

namespace xtk::analysis {

// Where the measured cross-traffic load came from, best first.
enum class LoadSource { counters, trace, flows, requested, none };
std::string_view to_string(LoadSource source);

// The span of the training iterations, CLOCK_REALTIME ns: the cross-traffic
// load is measured inside it.
struct Window {
  std::int64_t start_ns = 0, end_ns = 0;
};

struct NodeBandwidth {
  std::string node;
  std::string shares_bottleneck;  // "yes", "no", or "unknown" without bottleneck.host
  double train_tx_bps = 0, train_rx_bps = 0;
  double train_tx_p99_bps = 0;  // 99th percentile of the per-bin transmit rate
  double cross_bps = 0;         // cross traffic sent or received by the node
};

struct Step {
  StepInfo info;
  std::vector<double> iter_us;  // one per iteration (its slowest rank), sorted ascending
  double mean_us = 0, stdev_us = 0, cv = 0;
  Window window;
  double bytes_per_rank_iter = 0;  // mean of the iterations' `bytes`; NaN when all are 0
  // The training NIC's bytes over the window per iteration, in the link's
  // units as the load is; NaN without its counters.
  double wire_tx_bytes_per_iter = 0;
  // TCP segments retransmitted and retransmission timeouts per iteration: the
  // ranks' own connections where the iterations count them, else the
  // training NIC host's counters; NaN where neither does.
  double tcp_retransmits_per_iter = 0, tcp_timeouts_per_iter = 0;
  // The time the ranks' senders waited for their receivers' windows, in ms
  // per iteration, summed over the connections; NaN where not counted.
  double tcp_rwnd_limited_ms_per_iter = 0;
  // In the link's units: from counters or a trace with a payload share (the
  // netns testbed), the bytes counted with the headers of every segment a
  // counted super-packet carries (link_bytes); without one, as counted. From
  // flows or the request: payload.
  double measured_load_bps = 0;
  LoadSource load_source = LoadSource::none;
  std::vector<NodeBandwidth> nodes;      // from training trace bins, sorted by node
  std::optional<Stragglers> stragglers;  // from the collectives files, when the step has them
  std::vector<std::string> notes;        // why a figure the step's files should give is nan

  double capacity_bps() const { return info.bottleneck.link_bps; }
  double available_bps() const { return capacity_bps() - measured_load_bps; }
  // What the job's payload can use of the available bandwidth: D counts
  // gradient bytes, the link and the load in its units count headers too. A
  // load from flows.csv or the request is payload already.
  double available_payload_bps() const { return available_payload_bps_at(measured_load_bps); }
  // The same at another load, counted the way this step's load is (the
  // congestion point's intersection lies between steps).
  double available_payload_bps_at(double load_bps) const {
    const double share = info.bottleneck.payload_share;
    return load_source == LoadSource::counters || load_source == LoadSource::trace ? share * (capacity_bps() - load_bps)
                                                                                   : share * capacity_bps() - load_bps;
  }
  // Rates and times of the emulated cluster from the testbed's (identity without emulation).
  double emulated_bps(double testbed_bps) const {
    return info.emulation.link_bps > 0 ? testbed_bps * info.emulation.link_bps / capacity_bps() : testbed_bps;
  }
  double emulated_us(double testbed_us) const { return testbed_us / info.emulation.time_scale; }
  double percentile_us(double q) const;
};

struct StepOptions {
  std::uint64_t warmup = 0;  // iterations dropped from the start of each rank
};

Step load_step(const StepInfo& info, const StepOptions& options);

// The measured-load sources, on file content (exposed for tests). Each throws
// InputError naming `path` when the file has no usable data inside `window`.

// The frame counter beside a net: byte counter ("tx_bytes" -> "tx_packets"); nullopt for others.
std::optional<std::string> frames_counter(std::string_view bytes_counter);

// Bytes on the link of TCP frames counted as `bytes` in `frames`: with
// offloads on, a host's interface and its capture count a GSO or GRO
// super-packet as one frame with one set of headers, where the link carries
// one per segment. Each frame carries at least one segment; its payload (the
// bytes less each frame's kTcpFrameHeaderBytes) goes in full-size segments,
// whose size follows from `payload_share` (1448 at 1448/1514). A share of 1
// (none recorded) leaves the bytes as counted.
double link_bytes(double bytes, double frames, double payload_share);

// A byte counter's rate `bytes_per_s` over the window in the link's units,
// from the frame counter beside it in the same file (frames_counter); as it
// is without that counter or a payload share.
double link_bytes_per_s(std::string_view content, const std::string& path, std::string_view source,
                        std::string_view counter, Window window, double bytes_per_s, double payload_share);

// Bytes per unit of `counter` (a counter that counts no bytes: InputError naming `path`).
int byte_counter_unit(const std::string& path, std::string_view counter);

// Mean rate of a cumulative byte counter over the window: every interval
// between two samples, neither of them slow, counts by its overlap with the
// window (CLOCK_REALTIME), with its length taken from t_ns (CLOCK_MONOTONIC).
// A drop of the value is a wrap or a reset as counter_increase
// (formats/counters.hpp) decides; a reset's interval is left out.
double counter_load_bps(std::string_view content, const std::string& path, std::string_view source,
                        std::string_view counter, Window window);

// The increase of a cumulative counter over the window, counted as
// counter_load_bps counts its intervals, and the seconds those intervals
// cover (0 when the file has no usable samples of it there).
struct CounterIncrease {
  double increase = 0;
  double seconds = 0;
};
CounterIncrease counter_increase_in(std::string_view content, const std::string& path, std::string_view source,
                                    std::string_view counter, Window window);

// Trace bins of a step, each file of one traffic class: the cross traffic, or
// the training job's traffic. Only bins inside the window count (a bin partly
// inside by its share), over the part of the window the class's bins cover.
class TraceBins {
 public:
  // With `payload_share` < 1 every row's bytes are taken in the link's units (link_bytes).
  explicit TraceBins(Window window, double payload_share = 1) : window_(window), payload_share_(payload_share) {}
  // Throws InputError for a malformed file, or bins of another width or grid
  // than the class's other files.
  void add(std::string_view content, const std::string& path, bool cross);

  bool has_cross() const { return !cross_.paths.empty(); }
  // Cross-traffic bytes x 8 / covered time; InputError when they miss the window.
  double cross_load_bps() const;
  // Each host of the training bins: its training traffic sent and received,
  // the p99 of its per-bin send rate over the bins wholly inside the window
  // (bins it did not send in count as 0), and the cross traffic it sent or
  // received (NaN without cross bins). Sorted by host.
  std::vector<NodeBandwidth> nodes(std::string_view bottleneck_host) const;

 private:
  struct Span {
    std::int64_t first = -1, last = -1, bin = 0;  // bin starts and width, over the class's files
    std::vector<std::string> paths;
    std::int64_t covered_start(Window w) const { return std::max(w.start_ns, first); }
    std::int64_t covered_end(Window w) const { return std::min(w.end_ns, last + bin); }
  };
  struct Host {
    double tx = 0, rx = 0, cross = 0;
    std::vector<std::pair<std::int64_t, double>> tx_bins;  // (bin start, bytes) of bins wholly in the window
    bool training = false;
  };
  double covered_seconds(const Span& span) const;

  Window window_;
  Span cross_, training_;
  double payload_share_;
  double cross_bytes_ = 0;
  std::map<std::string, Host, std::less<>> hosts_;
};

// Cross-traffic load from flow records: the bytes of the flows that completed
// ok, each spread evenly over its [start, end]. With `start_realtime_ns` (the
// CLOCK_REALTIME of the schedules' time zero) only what falls in the window
// counts; without it, the records' own span is the measuring interval.
class FlowLoad {
 public:
  void add_file(std::string_view content, const std::string& path);
  double load_bps(Window window, std::optional<std::int64_t> start_realtime_ns) const;

 private:
  struct Span {
    std::int64_t start_ns, end_ns;
    double bytes;
  };
  std::vector<Span> spans_;
  std::vector<std::string> paths_;
};

}  // namespace xtk::analysis
