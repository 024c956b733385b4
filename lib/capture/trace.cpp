#include "capture/trace.hpp"

#include <pcap/pcap.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "capture/dissector.hpp"
#include "capture/trace_merge.hpp"
#include "core/cpus.hpp"
#include "core/error.hpp"
#include "core/handoff.hpp"
#include "core/units.hpp"
#include "formats/trace_bins.hpp"

namespace xtk::capture {
namespace {

// A BPF program compiled once per link type met in the files.
class PacketFilter {
 public:
  PacketFilter(std::string expression, std::uint32_t snaplen) : expression_(std::move(expression)), snaplen_(snaplen) {}
  ~PacketFilter() {
    for (auto& [linktype, program] : programs_) pcap_freecode(&program);
  }
  PacketFilter(const PacketFilter&) = delete;
  PacketFilter& operator=(const PacketFilter&) = delete;

  bool active() const { return !expression_.empty(); }
  void compile(std::uint32_t linktype) {
    if (programs_.count(linktype) != 0) return;
    // libpcap names raw IP by its DLT value, not the file's link type.
    const int dlt = linktype == kLinkRaw ? DLT_RAW : static_cast<int>(linktype);
    std::unique_ptr<pcap_t, void (*)(pcap_t*)> dead(
        pcap_open_dead(dlt, static_cast<int>(std::max<std::uint32_t>(snaplen_, 65535))), &pcap_close);
    bpf_program program{};
    if (pcap_compile(dead.get(), &program, expression_.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
      throw UsageError(fmt::format("--filter '{}': {}", expression_, pcap_geterr(dead.get())));
    }
    programs_.emplace(linktype, program);
  }
  bool pass(std::uint32_t linktype, const Record& r) const {
    pcap_pkthdr header{};
    header.caplen = r.caplen;
    header.len = r.wirelen;
    return pcap_offline_filter(&programs_.at(linktype), &header, r.data) != 0;
  }

 private:
  std::string expression_;
  std::uint32_t snaplen_;
  std::map<std::uint32_t, bpf_program> programs_;
};

// Dissected packets on their way to the flow table and their bins: the
// first thread dissects straight into a batch, so handing it over copies
// nothing.
struct PacketBatch {
  static constexpr std::size_t kPackets = 2048;  // about 150 KiB: a few in flight stay in cache
  std::array<Packet, kPackets> packets{};
  std::array<std::int64_t, kPackets> stamps{};
  std::size_t n = 0;
};

// Counts dissected packets in the flow table and their bins (and writes the
// bins file) on a thread of its own where a second CPU is free, so that
// reading and dissecting overlap with it; inline where not. Either way in
// order. The flow table is used only from here until finish().
class CountingStage {
 public:
  CountingStage(FlowTable& flows, SeriesBins& bins) : flows_(flows), bins_(bins) {
    if (allowed_cpus().size() < 2) {
      inline_batch_ = std::make_unique<PacketBatch>();
      current_ = inline_batch_.get();
      return;
    }
    handoff_ = std::make_unique<Handoff<PacketBatch>>(kInFlight);
    current_ = handoff_->take_empty();
    thread_ = std::thread([this] { run(); });
  }
  ~CountingStage() {  // a run ended by an error: the thread stops
    if (thread_.joinable()) {
      handoff_->finish();
      thread_.join();
    }
  }
  CountingStage(const CountingStage&) = delete;
  CountingStage& operator=(const CountingStage&) = delete;

  PacketBatch& batch() { return *current_; }  // the one being filled
  // Counts the batch being filled (or hands it over), and starts another.
  void submit() {
    if (!handoff_) {
      count(*current_);
      return;
    }
    handoff_->put_full(current_);
    current_ = handoff_->take_empty();
    if (current_ == nullptr) finish();  // the thread failed: its error
  }
  // Every packet submitted or in the batch being filled is counted. Rethrows
  // what the counting thread threw (a bins file that cannot be written).
  void finish() {
    if (!handoff_) {
      count(*current_);
      return;
    }
    if (current_ != nullptr) handoff_->put_full(current_);
    current_ = nullptr;
    handoff_->finish();
    thread_.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  // A stage that waits sleeps until half of these are ready (core/handoff.hpp):
  // one sleep per four batches, with eight in flight (1.2 MiB, within a core's L2).
  static constexpr std::size_t kInFlight = 8;

  void count(PacketBatch& b) {
    flows_.add_batch(b.packets.data(), b.stamps.data(), b.n, series_.data());
    for (std::size_t i = 0; i < b.n; ++i) bytes_[i] = b.packets[i].wire_bytes;
    bins_.add_batch(series_.data(), b.stamps.data(), bytes_.data(), b.n);
    b.n = 0;
  }
  void run() {
    while (PacketBatch* b = handoff_->take_full()) {
      try {
        count(*b);
      } catch (...) {
        error_ = std::current_exception();
        handoff_->stop();
        return;
      }
      handoff_->put_empty(b);
    }
  }

  FlowTable& flows_;
  SeriesBins& bins_;
  std::array<std::uint32_t, PacketBatch::kPackets> series_{};
  std::array<std::uint64_t, PacketBatch::kPackets> bytes_{};
  std::unique_ptr<PacketBatch> inline_batch_;  // on one CPU, the only batch
  std::unique_ptr<Handoff<PacketBatch>> handoff_;
  PacketBatch* current_ = nullptr;
  std::thread thread_;
  std::exception_ptr error_;
};

bool any_matches(const std::vector<Address>& list, const FlowKey& key, bool src, bool dst) {
  return std::any_of(list.begin(), list.end(),
                     [&](const Address& a) { return (src && a.matches_src(key)) || (dst && a.matches_dst(key)); });
}

}  // namespace

TimeBound parse_time_bound(const std::string& text, std::string_view flag) {
  TimeBound b;
  try {
    if (!text.empty() && text[0] == '@') {
      b.absolute = true;
      const double ns = parse_number(text.substr(1));
      if (ns < 0) throw UsageError("negative");
      b.ns = static_cast<std::int64_t>(ns);
    } else {
      b.ns = parse_duration_ns(text);
    }
  } catch (const UsageError&) {
    throw UsageError(
        fmt::format("{}: '{}' is neither a duration from the first packet (2s, 500ms) nor @NS, an "
                    "absolute CLOCK_REALTIME time in ns",
                    flag, text));
  }
  if (!b.absolute && b.ns < 0) throw UsageError(fmt::format("{}: '{}' is negative", flag, text));
  return b;
}

TraceResult analyze_trace(const TraceOptions& o) {
  if (o.bin_ns <= 0) throw UsageError("--bin: the bin width must be above 0");
  TraceResult result;
  result.files = o.files;
  result.bin_ns = o.bin_ns;
  result.smooth_bins = std::max<std::size_t>(1, o.smooth_bins);
  TraceMerge merge(o.files);
  result.linktypes = merge.linktypes();
  result.snaplen = merge.max_snaplen();
  PacketFilter filter(o.filter, merge.max_snaplen());
  if (filter.active()) {
    for (std::uint32_t linktype : result.linktypes) filter.compile(linktype);
  }

  const std::int64_t t0 = merge.first_ts_ns();
  auto resolve = [&](const std::optional<TimeBound>& b, std::int64_t fallback) {
    if (!b) return fallback;
    return b->absolute ? b->ns : t0 + b->ns;
  };
  const std::int64_t from = resolve(o.from, INT64_MIN);
  const std::int64_t to = resolve(o.to, INT64_MAX);
  if (o.from && o.to && to <= from) throw UsageError("--to must be after --from");

  const HeaderKeys header{{"generator", "xtk-analyze trace"}, {"per", bin_key_name(o.per)}};
  std::unique_ptr<TraceBinsWriter> bins;
  if (!o.bins_path.empty()) bins = std::make_unique<TraceBinsWriter>(o.bins_path, o.bin_ns, header);
  std::unique_ptr<TraceSeriesWriter> series_file;
  if (!o.series_path.empty()) {
    series_file = std::make_unique<TraceSeriesWriter>(o.series_path, o.bin_ns, result.smooth_bins,
                                                      HeaderKeys{{"generator", "xtk-analyze trace"}});
  }
  RateSeries series(o.bin_ns, result.smooth_bins, o.histogram_step_bps, [&](const SeriesPoint& p) {
    if (series_file) series_file->row(p.bin_start_ns, p.bytes, p.packets, p.rate_bps, p.smoothed_bps);
  });
  if (o.from) series.begin(floor_div(from, o.bin_ns) * o.bin_ns);
  // Rows leave bin by bin: the series takes each bin's total once, not row by row.
  BinRow bin_total{INT64_MIN, 0, 0, 0};
  auto add_bin_total = [&] {
    if (bin_total.packets > 0) series.add(bin_total.bin_start_ns, bin_total.bytes, bin_total.packets);
  };
  SeriesBins bins_of_series(o.bin_ns, o.reorder_ns, [&](const BinRow& row, std::string_view fields) {
    if (bins) bins->row(row.bin_start_ns, fields, row.bytes, row.packets);
    if (row.bin_start_ns != bin_total.bin_start_ns) {
      add_bin_total();
      bin_total = BinRow{row.bin_start_ns, 0, 0, 0};
    }
    bin_total.bytes += row.bytes;
    bin_total.packets += row.packets;
  });

  const bool host_filter = !o.hosts.empty() || !o.srcs.empty() || !o.dsts.empty();
  // Whether a packet in the window passes --filter and the host filters.
  auto selected = [&](const Record& r, std::uint32_t linktype, Packet& packet) {
    if (filter.active() && !filter.pass(linktype, r)) return false;
    dissect(linktype, r.data, r.caplen, r.wirelen, packet);
    if (!host_filter) return true;
    const FlowKey& k = packet.key;
    if (k.family == 0) return false;
    if (!o.hosts.empty() && !any_matches(o.hosts, k, true, true)) return false;
    if (!o.srcs.empty() && !any_matches(o.srcs, k, true, false)) return false;
    return o.dsts.empty() || any_matches(o.dsts, k, false, true);
  };
  // Packets are read and dissected a batch at a time, and counted in the
  // flow table and their bins a batch at a time on a second thread.
  constexpr std::size_t kBatch = 32;
  std::array<Record, kBatch> records;
  FlowTable flows(o.per, bins ? FlowTable::NewSeries([&](std::uint32_t id, std::string fields) {
                    bins_of_series.name(id, std::move(fields));
                  })
                              : FlowTable::NewSeries());
  CountingStage counting(flows, bins_of_series);
  std::uint32_t linktype = 0;
  bool first = true;
  while (const std::size_t got = merge.next_batch(records.data(), kBatch, linktype)) {
    // The batch being filled has room for these: packets go straight into it.
    PacketBatch& batch = counting.batch();
    Packet* packets = batch.packets.data() + batch.n;
    std::int64_t* stamps = batch.stamps.data() + batch.n;
    std::size_t n = 0;
    for (std::size_t i = 0; i < got; ++i) {
      const Record& r = records[i];
      ++result.packets_read;
      result.bytes_read += r.wirelen;
      result.trace_last_ns = std::max(result.trace_last_ns, r.ts_ns);
      if (r.ts_ns < from || r.ts_ns >= to) continue;
      Packet& packet = packets[n];
      if (!selected(r, linktype, packet)) continue;
      result.not_ip += packet.key.family == 0 ? 1 : 0;
      result.cut += packet.problem == Problem::cut ? 1 : 0;
      result.malformed += packet.problem == Problem::malformed ? 1 : 0;
      result.fragments += packet.fragment ? 1 : 0;
      ++result.packets;
      result.bytes += packet.wire_bytes;
      if (first || r.ts_ns < result.first_ns) result.first_ns = r.ts_ns;
      if (first || r.ts_ns > result.last_ns) result.last_ns = r.ts_ns;
      first = false;
      stamps[n++] = r.ts_ns;
    }
    batch.n += n;
    if (batch.n + kBatch > PacketBatch::kPackets) counting.submit();
  }
  counting.finish();
  result.damage = merge.damage();
  bins_of_series.finish();
  add_bin_total();
  result.late = bins_of_series.late_packets();
  result.trace_first_ns = t0;
  result.window_from_ns = o.from ? from : t0;
  // A window past the end of the trace stops at its last packet: no empty bins beyond what was captured.
  result.window_to_ns = std::min(to, result.trace_last_ns + 1);
  // The series spans the window when one was given, else the selected packets.
  if (o.to && result.packets_read > 0) {
    series.finish(floor_div(result.window_to_ns - 1, o.bin_ns) * o.bin_ns);
  } else if (result.packets > 0) {
    series.finish(floor_div(result.last_ns, o.bin_ns) * o.bin_ns);
  }
  if (bins) bins->close();
  if (series_file) series_file->close();

  result.rate_bins = series.bins();
  if (series.smoothed_stats().count() > 0) {
    result.rate_mean_bps = series.smoothed_stats().mean();
    result.rate_p50_bps = series.smoothed_quantiles().quantile(0.5);
    result.rate_p99_bps = series.smoothed_quantiles().quantile(0.99);
    result.rate_max_bps = series.smoothed_stats().max();
  }
  result.histogram = series.histogram().buckets();

  result.flows.reserve(flows.flow_count());
  for (std::size_t i = 0; i < flows.flow_count(); ++i) {
    FlowRow row;
    const FlowKey& key = flows.key(i);
    row.flow = key.text();
    row.src = key.src_text();
    row.dst = key.dst_text();
    row.stats = flows.stats(i);
    const std::int64_t span = row.stats.last_ns - row.stats.first_ns;
    row.mean_bps = span > 0 ? static_cast<double>(row.stats.bytes) * 8 / (static_cast<double>(span) * 1e-9) : 0;
    result.flows.push_back(std::move(row));
  }
  std::stable_sort(result.flows.begin(), result.flows.end(),
                   [](const FlowRow& a, const FlowRow& b) { return a.stats.bytes > b.stats.bytes; });
  return result;
}

}  // namespace xtk::capture
