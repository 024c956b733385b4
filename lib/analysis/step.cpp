#include "analysis/step.hpp"

#include <arpa/inet.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "formats/counters.hpp"
#include "formats/csv_file.hpp"
#include "formats/flow_records.hpp"
#include "formats/iterations.hpp"
#include "formats/trace_bins.hpp"

namespace xtk::analysis {
namespace {

// A host of the testbed, not a link-local, multicast, broadcast or unspecified
// address (neighbour discovery and MLD show up in a training capture with
// those). Names that are not addresses count as hosts.
bool is_host_address(const std::string& name) {
  in_addr v4{};
  if (inet_pton(AF_INET, name.c_str(), &v4) == 1) {
    const std::uint32_t a = ntohl(v4.s_addr);
    return a != 0 && a != 0xFFFFFFFFU && (a >> 28) != 0xE;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, name.c_str(), &v6) == 1) {
    const auto* b = v6.s6_addr;
    const bool unspecified = std::all_of(b, b + 16, [](unsigned char c) { return c == 0; });
    const bool link_local = b[0] == 0xFE && (b[1] & 0xC0) == 0x80;
    return !unspecified && !link_local && b[0] != 0xFF;
  }
  return true;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Length of the overlap of [a0, a1) and [b0, b1), 0 when they are disjoint.
double overlap_ns(std::int64_t a0, std::int64_t a1, std::int64_t b0, std::int64_t b1) {
  return static_cast<double>(std::max<std::int64_t>(0, std::min(a1, b1) - std::max(a0, b0)));
}

// percentile_sorted of `zeros` zeros followed by `sorted` (non-negative, ascending).
double percentile_with_zeros(const std::vector<double>& sorted, std::uint64_t zeros, double q) {
  const auto n = static_cast<double>(zeros + sorted.size());
  const double pos = q * (n - 1);
  auto at = [&](std::uint64_t i) { return i < zeros ? 0.0 : sorted[i - zeros]; };
  const auto lo = static_cast<std::uint64_t>(pos);
  const std::uint64_t hi = std::min<std::uint64_t>(lo + 1, zeros + sorted.size() - 1);
  return at(lo) + (at(hi) - at(lo)) * (pos - static_cast<double>(lo));
}

std::string window_text(Window w) { return fmt::format("[{}, {}] realtime ns", w.start_ns, w.end_ns); }

struct KeptIteration {
  std::uint64_t iter;
  double us;
  std::int64_t start_ns, end_ns;
  std::uint64_t bytes;
  std::optional<std::uint64_t> tcp_retransmits, tcp_timeouts, tcp_rwnd_limited_us;
};

// The ranks' own count of an iteration's TCP events, summed over the kept
// rows (one per process carries its connections'), per job iteration; none
// when no row counted it.
std::optional<double> ranks_tcp_per_iter(const std::vector<const std::vector<KeptIteration>*>& kept,
                                         std::optional<std::uint64_t> KeptIteration::*count, double iterations) {
  std::optional<double> total;
  for (const auto* list : kept) {
    for (const auto& r : *list) {
      if (r.*count) total = total.value_or(0) + static_cast<double>(*(r.*count));
    }
  }
  if (!total) return std::nullopt;
  return *total / iterations;
}

}  // namespace

std::string_view to_string(LoadSource source) {
  switch (source) {
    case LoadSource::counters:
      return "counters";
    case LoadSource::trace:
      return "trace";
    case LoadSource::flows:
      return "flows";
    case LoadSource::requested:
      return "requested";
    case LoadSource::none:
      break;
  }
  return "none";
}

double Step::percentile_us(double q) const { return percentile_sorted(iter_us, q); }

double link_bytes(double bytes, double frames, double payload_share) {
  if (payload_share >= 1 || frames <= 0) return bytes;
  const double payload = std::max(0.0, bytes - frames * kTcpFrameHeaderBytes);
  const double segment_payload = kTcpFrameHeaderBytes * payload_share / (1 - payload_share);
  return payload + std::max(frames, payload / segment_payload) * kTcpFrameHeaderBytes;
}

std::optional<std::string> frames_counter(std::string_view bytes_counter) {
  constexpr std::string_view kSuffix = "_bytes";
  if (!bytes_counter.ends_with(kSuffix)) return std::nullopt;
  return std::string(bytes_counter.substr(0, bytes_counter.size() - kSuffix.size())) + "_packets";
}

double link_bytes_per_s(std::string_view content, const std::string& path, std::string_view source,
                        std::string_view counter, Window window, double bytes_per_s, double payload_share) {
  const auto name = frames_counter(counter);
  if (!name || payload_share >= 1) return bytes_per_s;
  const auto frames = counter_increase_in(content, path, source, *name, window);
  return frames.seconds > 0 ? link_bytes(bytes_per_s, frames.increase / frames.seconds, payload_share) : bytes_per_s;
}

int byte_counter_unit(const std::string& path, std::string_view counter) {
  const int unit = counter_bytes_per_unit(counter);
  if (unit == 0) {
    throw InputError(path, 0,
                     fmt::format("counter {} does not count bytes (names with 'bytes' or 'octets', port_xmit_data, "
                                 "port_rcv_data)",
                                 counter));
  }
  return unit;
}

double counter_load_bps(std::string_view content, const std::string& path, std::string_view source,
                        std::string_view counter, Window window) {
  const int unit = byte_counter_unit(path, counter);
  const auto in_window = counter_increase_in(content, path, source, counter, window);
  if (!(in_window.seconds > 0)) {
    throw InputError(path, 0,
                     fmt::format("no usable samples of {} {} inside the iterations' window {} (two samples, neither "
                                 "slow, are needed around each interval)",
                                 source, counter, window_text(window)));
  }
  return in_window.increase * unit * 8 / in_window.seconds;
}

CounterIncrease counter_increase_in(std::string_view content, const std::string& path, std::string_view source,
                                    std::string_view counter, Window window) {
  CounterIncrease out;
  bool have_previous = false;
  CounterSample previous;
  read_counters(content, path, [&](const CounterSample& s) {
    if (s.source != source || s.name != counter) return;
    if (have_previous && !s.slow && !previous.slow && s.realtime_ns > previous.realtime_ns) {
      const auto delta = counter_increase(previous.value, s.value);
      if (delta) {
        const double share = overlap_ns(previous.realtime_ns, s.realtime_ns, window.start_ns, window.end_ns) /
                             static_cast<double>(s.realtime_ns - previous.realtime_ns);
        out.increase += share * static_cast<double>(*delta);
        out.seconds += share * static_cast<double>(s.t_ns - previous.t_ns) * 1e-9;
      }
    }
    previous = s;
    have_previous = true;
  });
  return out;
}

void TraceBins::add(std::string_view content, const std::string& path, bool cross) {
  Span& span = cross ? cross_ : training_;
  std::int64_t first = -1;
  read_trace_bins(content, path, [&](const TraceHeader& header, const TraceBin& b) {
    if (first < 0) {
      first = b.bin_start_ns;
      if (span.first < 0) {
        span.first = first;
        span.bin = header.bin_ns;
      } else if (header.bin_ns != span.bin || (first - span.first) % span.bin != 0) {
        throw InputError(path, 0,
                         fmt::format("bins of {} ns from {} are not on the grid of {} ({} ns from {})", header.bin_ns,
                                     first, span.paths.front(), span.bin, span.first));
      }
    }
    span.first = std::min(span.first, b.bin_start_ns);
    span.last = std::max(span.last, b.bin_start_ns);
    const double share = overlap_ns(b.bin_start_ns, b.bin_start_ns + span.bin, window_.start_ns, window_.end_ns) /
                         static_cast<double>(span.bin);
    if (share == 0) return;
    // In the link's units, as the load is.
    const double row_bytes = link_bytes(static_cast<double>(b.bytes), static_cast<double>(b.packets), payload_share_);
    const double bytes = share * row_bytes;
    auto host = [&](std::string_view name) -> Host& {
      auto it = hosts_.find(name);
      if (it == hosts_.end()) it = hosts_.emplace(std::string(name), Host{}).first;
      return it->second;
    };
    if (cross) {
      cross_bytes_ += bytes;
      host(b.src).cross += bytes;
      host(b.dst).cross += bytes;
      return;
    }
    Host& src = host(b.src);
    src.training = true;
    src.tx += bytes;
    if (share == 1.0) src.tx_bins.emplace_back(b.bin_start_ns, row_bytes);
    Host& dst = host(b.dst);
    dst.training = true;
    dst.rx += bytes;
  });
  if (first < 0) throw InputError(path, 0, "no bins: the trace is empty");
  span.paths.push_back(path);
}

double TraceBins::covered_seconds(const Span& span) const {
  const std::int64_t start = span.covered_start(window_), end = span.covered_end(window_);
  if (end <= start) {
    throw InputError(fmt::format("{}", fmt::join(span.paths, ", ")), 0,
                     fmt::format("the bins [{}, {}] do not overlap the iterations' window {}", span.first,
                                 span.last + span.bin, window_text(window_)));
  }
  return static_cast<double>(end - start) * 1e-9;
}

double TraceBins::cross_load_bps() const { return cross_bytes_ * 8 / covered_seconds(cross_); }

std::vector<NodeBandwidth> TraceBins::nodes(std::string_view bottleneck_host) const {
  std::vector<NodeBandwidth> out;
  if (training_.paths.empty()) return out;
  const double seconds = covered_seconds(training_);
  const double cross_seconds = has_cross() ? covered_seconds(cross_) : kNaN;
  // The bins of the grid wholly inside the covered span.
  const std::int64_t bin = training_.bin, start = training_.covered_start(window_);
  const std::int64_t first_full = training_.first + (start - training_.first + bin - 1) / bin * bin;
  const std::int64_t full_bins = std::max<std::int64_t>(0, (training_.covered_end(window_) - first_full) / bin);
  for (const auto& [name, h] : hosts_) {
    if (!h.training || !is_host_address(name)) continue;
    NodeBandwidth n;
    n.node = name;
    n.shares_bottleneck = bottleneck_host.empty() ? "unknown" : name == bottleneck_host ? "yes" : "no";
    n.train_tx_bps = h.tx * 8 / seconds;
    n.train_rx_bps = h.rx * 8 / seconds;
    n.cross_bps = h.cross * 8 / cross_seconds;
    // Bytes per busy bin (several rows and files may share one), then the
    // idle bins as zeros in front of them.
    auto bins = h.tx_bins;
    std::sort(bins.begin(), bins.end());
    std::vector<double> busy;
    for (std::size_t i = 0; i < bins.size(); ++i) {
      if (i > 0 && bins[i].first == bins[i - 1].first) {
        busy.back() += bins[i].second;
      } else {
        busy.push_back(bins[i].second);
      }
    }
    std::sort(busy.begin(), busy.end());
    const auto zeros = static_cast<std::uint64_t>(full_bins) - std::min<std::uint64_t>(busy.size(), full_bins);
    n.train_tx_p99_bps =
        full_bins == 0 ? kNaN : percentile_with_zeros(busy, zeros, 0.99) * 8 / (static_cast<double>(bin) * 1e-9);
    out.push_back(std::move(n));
  }
  return out;
}

void FlowLoad::add_file(std::string_view content, const std::string& path) {
  paths_.push_back(path);
  read_flow_records(content, path, [&](const FlowRecord& f) {
    // Failed flows moved an unknown share of their bytes: they are left out.
    if (f.status == FlowStatus::ok) spans_.push_back({f.start_ns, f.end_ns, static_cast<double>(f.size_bytes)});
  });
}

double FlowLoad::load_bps(Window window, std::optional<std::int64_t> start_realtime_ns) const {
  const std::string files = fmt::format("{}", fmt::join(paths_, ", "));
  if (spans_.empty()) throw InputError(files, 0, "no flow completed ok: the records give no load");
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
  for (const auto& s : spans_) {
    first = std::min(first, s.start_ns);
    last = std::max(last, s.end_ns);
  }
  const std::int64_t zero = start_realtime_ns.value_or(0);
  if (zero > 0 && last > std::numeric_limits<std::int64_t>::max() - zero) {
    throw InputError(files, 0,
                     fmt::format("end_ns {} after start_realtime_ns {} is past the largest time", last, zero));
  }
  std::int64_t covered_start = first, covered_end = last;
  if (start_realtime_ns) {
    covered_start = std::max(window.start_ns, zero + first);
    covered_end = std::min(window.end_ns, zero + last);
    if (covered_end <= covered_start) {
      throw InputError(files, 0,
                       fmt::format("the ok flows [{}, {}] do not overlap the iterations' window {}", zero + first,
                                   zero + last, window_text(window)));
    }
  } else if (covered_end <= covered_start) {
    throw InputError(files, 0, "the ok flows span no time: the records give no load");
  }
  double bytes = 0;
  for (const auto& s : spans_) {
    const std::int64_t start = zero + s.start_ns, end = zero + s.end_ns;
    if (end == start) {
      if (start >= covered_start && start < covered_end) bytes += s.bytes;
    } else {
      bytes += s.bytes * overlap_ns(start, end, covered_start, covered_end) / static_cast<double>(end - start);
    }
  }
  return bytes * 8 / (static_cast<double>(covered_end - covered_start) * 1e-9);
}

Step load_step(const StepInfo& info, const StepOptions& options) {
  Step step;
  step.info = info;

  // Each rank's iterations, in order; a rank lives in one file.
  std::map<std::uint64_t, std::pair<std::size_t, std::vector<KeptIteration>>> ranks;
  for (std::size_t f = 0; f < info.iterations.size(); ++f) {
    const std::string& path = info.iterations[f];
    const std::string text = read_text_file(path, "iterations file");
    read_iterations(text, path, info.ranks, [&](const IterationRecord& r) {
      auto [it, inserted] = ranks.try_emplace(r.rank, f, std::vector<KeptIteration>{});
      if (!inserted && it->second.first != f) {
        throw InputError(path, 0,
                         fmt::format("rank {} is also in {}: each rank's iterations are in one file", r.rank,
                                     info.iterations[it->second.first]));
      }
      it->second.second.push_back(
          {r.iter, r.iter_us, r.start_ns, r.end_ns, r.bytes, r.tcp_retransmits, r.tcp_timeouts, r.tcp_rwnd_limited_us});
    });
  }
  const std::string& first_file = info.iterations.front();

  std::vector<const std::vector<KeptIteration>*> kept;
  std::int64_t start = std::numeric_limits<std::int64_t>::max(), end = 0;
  double bytes = 0, rows = 0;
  for (auto& [rank, entry] : ranks) {
    auto& list = entry.second;
    list.erase(list.begin(), list.begin() + static_cast<long>(std::min<std::uint64_t>(options.warmup, list.size())));
    if (list.empty()) continue;
    for (const auto& r : list) {
      start = std::min(start, r.start_ns);
      end = std::max(end, r.end_ns);
      bytes += static_cast<double>(r.bytes);
    }
    rows += static_cast<double>(list.size());
    kept.push_back(&list);
  }
  if (kept.empty()) {
    throw InputError(first_file, 0,
                     fmt::format("no iterations (after dropping {} warm-up iterations per rank)", options.warmup));
  }
  step.window = {start, end};
  step.bytes_per_rank_iter = bytes > 0 ? bytes / rows : kNaN;

  // The job's iteration time is that of its slowest rank. Ranks usually
  // report the same iterations: then it is an element-wise max.
  const bool aligned = std::all_of(kept.begin(), kept.end(), [&](const auto* list) {
    return list->size() == kept.front()->size() && list->front().iter == kept.front()->front().iter &&
           list->back().iter == kept.front()->back().iter;
  });
  if (aligned) {
    step.iter_us.assign(kept.front()->size(), 0.0);
    for (const auto* list : kept) {
      for (std::size_t i = 0; i < list->size(); ++i) step.iter_us[i] = std::max(step.iter_us[i], (*list)[i].us);
    }
  } else {
    std::vector<std::pair<std::uint64_t, double>> all;
    for (const auto* list : kept) {
      for (const auto& r : *list) all.emplace_back(r.iter, r.us);
    }
    std::sort(all.begin(), all.end());
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (i == 0 || all[i].first != all[i - 1].first) {
        step.iter_us.push_back(all[i].second);
      } else {
        step.iter_us.back() = std::max(step.iter_us.back(), all[i].second);
      }
    }
  }
  RunningStats stats;
  for (double us : step.iter_us) stats.add(us);
  step.mean_us = stats.mean();
  step.stdev_us = stats.stdev();
  step.cv = stats.cv();
  std::sort(step.iter_us.begin(), step.iter_us.end());

  // Cross-traffic load: bottleneck counters, then trace bins, then flow records.
  // The training bins are read whatever the source, for the nodes' bandwidth.
  const auto& b = info.bottleneck;
  TraceBins trace(step.window, b.payload_share);
  for (const auto& path : info.cross_bins) trace.add(read_text_file(path, "trace bins"), path, true);
  for (const auto& path : info.training_bins) trace.add(read_text_file(path, "trace bins"), path, false);
  step.nodes = trace.nodes(b.host);
  if (!info.counters.empty() && !b.source.empty()) {
    const std::string counters = read_text_file(info.counters, "counters");
    const double bytes_per_s = counter_load_bps(counters, info.counters, b.source, b.counter, step.window) / 8;
    step.measured_load_bps =
        8 * link_bytes_per_s(counters, info.counters, b.source, b.counter, step.window, bytes_per_s, b.payload_share);
    step.load_source = LoadSource::counters;
  } else if (trace.has_cross()) {
    step.measured_load_bps = trace.cross_load_bps();
    step.load_source = LoadSource::trace;
  } else if (!info.flows.empty()) {
    FlowLoad flows;
    for (const auto& path : info.flows) flows.add_file(read_text_file(path, "flow records"), path);
    step.measured_load_bps = flows.load_bps(step.window, info.start_realtime_ns);
    step.load_source = LoadSource::flows;
  } else {
    const bool idle = info.profile == kNoCrossTraffic;
    step.measured_load_bps = idle ? 0.0 : info.load_bps;
    step.load_source = idle ? LoadSource::none : LoadSource::requested;
  }
  step.wire_tx_bytes_per_iter = step.tcp_retransmits_per_iter = step.tcp_timeouts_per_iter =
      step.tcp_rwnd_limited_ms_per_iter = kNaN;
  if (!info.training_counters.empty() && !step.iter_us.empty()) {
    const auto& nic = info.training_nic;
    const std::string counters = read_text_file(info.training_counters, "counters");
    const double window_s = static_cast<double>(step.window.end_ns - step.window.start_ns) * 1e-9;
    const double iterations = static_cast<double>(step.iter_us.size());
    // A diagnostic beside the load: samples that miss the window (a sampler
    // that started late on a loaded host) leave it nan, with a note, rather
    // than failing the step's other figures.
    const auto sent = counter_increase_in(counters, info.training_counters, nic.source, nic.counter, step.window);
    if (sent.seconds > 0) {
      const double bytes_per_s = sent.increase * byte_counter_unit(info.training_counters, nic.counter) / sent.seconds;
      step.wire_tx_bytes_per_iter = link_bytes_per_s(counters, info.training_counters, nic.source, nic.counter,
                                                     step.window, bytes_per_s, b.payload_share) *
                                    window_s / iterations;
    } else {
      step.notes.push_back(
          fmt::format("{}: no usable samples of {} {} inside the iterations' window {}: "
                      "wire_tx_bytes_per_iter is nan",
                      info.training_counters, nic.source, nic.counter, window_text(step.window)));
    }
    // Over the part of the window the samples cover, scaled to all of it, as the bytes are.
    const auto per_iter = [&](std::string_view name) {
      const auto c = counter_increase_in(counters, info.training_counters, kTcpCounterSource, name, step.window);
      return c.seconds > 0 ? c.increase / c.seconds * window_s / iterations : kNaN;
    };
    step.tcp_retransmits_per_iter = per_iter(kTcpRetransmits);
    step.tcp_timeouts_per_iter = per_iter(kTcpTimeouts);
  }
  // Where the ranks counted their own connections, those are the job's TCP
  // events on every host, and no other process's: they replace one host's.
  const double job_iterations = static_cast<double>(step.iter_us.size());
  if (const auto v = ranks_tcp_per_iter(kept, &KeptIteration::tcp_retransmits, job_iterations)) {
    step.tcp_retransmits_per_iter = *v;
  }
  if (const auto v = ranks_tcp_per_iter(kept, &KeptIteration::tcp_timeouts, job_iterations)) {
    step.tcp_timeouts_per_iter = *v;
  }
  if (const auto v = ranks_tcp_per_iter(kept, &KeptIteration::tcp_rwnd_limited_us, job_iterations)) {
    step.tcp_rwnd_limited_ms_per_iter = *v / 1e3;
  }
  if (!info.collectives.empty()) {
    auto s = read_stragglers(info.collectives, info.ranks, options.warmup);
    if (s.calls > 0) step.stragglers = std::move(s);
  }
  return step;
}

}  // namespace xtk::analysis
