#include "workload/inspect.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/report.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"

namespace xtk {
namespace {

std::optional<std::int64_t> header_int(const ScheduleHeader& header, std::string_view key) {
  const auto value = header.get(key);
  if (!value) return std::nullopt;
  const std::string_view text = *value;
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

// Offered bytes per fixed window, accumulated as the sorted starts go by.
class WindowBinner {
 public:
  explicit WindowBinner(std::int64_t window_ns) : window_ns_(window_ns) {}

  void add(std::int64_t start_ns, std::uint64_t bytes) {
    const std::int64_t w = start_ns / window_ns_;
    if (w != current_) close_until(w);
    bytes_ += bytes;
  }

  WindowLoad finish(std::int64_t duration_ns) {
    const std::int64_t last = std::max<std::int64_t>((duration_ns + window_ns_ - 1) / window_ns_, current_ + 1);
    close_until(last);
    WindowLoad load;
    load.window_ns = window_ns_;
    load.windows = stats_.count();
    const double to_bps = 8e9 / static_cast<double>(window_ns_);
    load.mean_bps = stats_.mean() * to_bps;
    load.p50_bps = histogram_.quantile(0.50) * to_bps;
    load.p99_bps = histogram_.quantile(0.99) * to_bps;
    load.max_bps = stats_.max() * to_bps;
    load.cv = stats_.cv();
    load.empty_share = stats_.count() ? static_cast<double>(empty_) / static_cast<double>(stats_.count()) : 0;
    return load;
  }

 private:
  void close_until(std::int64_t w) {
    record(bytes_);
    bytes_ = 0;
    for (std::int64_t gap = current_ + 1; gap < w; ++gap) record(0);
    current_ = w;
  }
  void record(std::uint64_t bytes) {
    stats_.add(static_cast<double>(bytes));
    histogram_.add(bytes);
    if (bytes == 0) ++empty_;
  }

  std::int64_t window_ns_;
  std::int64_t current_ = 0;
  std::uint64_t bytes_ = 0, empty_ = 0;
  RunningStats stats_;
  LogHistogram histogram_;
};

}  // namespace

InspectReport inspect_schedule(ScheduleReader& reader, const InspectOptions& options) {
  InspectReport r;
  r.header = reader.header();
  std::vector<WindowBinner> binners;
  for (auto w : options.windows_ns) binners.emplace_back(w);
  const auto width = options.burst_width_ns ? options.burst_width_ns : header_int(r.header, "burst_width_ns");
  const auto period = options.burst_period_ns ? options.burst_period_ns : header_int(r.header, "burst_period_ns");
  const bool burst = width && period && *width > 0 && *period > *width;
  std::uint64_t burst_bytes = 0;
  std::int64_t burst_index = -1;
  std::uint64_t burst_flows = 0, min_burst_flows = UINT64_MAX, bursts_seen = 0;

  LogHistogram sizes;
  Flow flow;
  while (reader.next(flow)) {
    if (r.flows == 0) r.first_start_ns = flow.start_ns;
    r.last_start_ns = flow.start_ns;
    ++r.flows;
    r.bytes += flow.size_bytes;
    sizes.add(flow.size_bytes);
    for (auto& b : binners) b.add(flow.start_ns, flow.size_bytes);
    for (auto [map, host] : {std::pair{&r.by_src, flow.src}, std::pair{&r.by_dst, flow.dst}}) {
      auto it = map->find(host);
      if (it == map->end()) it = map->emplace(std::string(host), HostLoad{}).first;
      ++it->second.flows;
      it->second.bytes += flow.size_bytes;
    }
    if (r.header.has_dscp) ++r.flows_by_dscp[flow.dscp];
    if (r.header.has_rate) ++r.flows_by_rate[flow.rate_bps];
    if (burst && flow.start_ns % *period < *width) {
      burst_bytes += flow.size_bytes;
      const std::int64_t index = flow.start_ns / *period;
      if (index != burst_index) {
        // Windows skipped without a flow count as bursts of zero flows.
        if (burst_index >= 0) min_burst_flows = std::min(min_burst_flows, burst_flows);
        if (index > burst_index + 1) min_burst_flows = 0;
        burst_index = index;
        burst_flows = 0;
        ++bursts_seen;
      }
      ++burst_flows;
    }
  }
  r.duration_ns = header_int(r.header, "duration_ns").value_or(r.last_start_ns + 1);
  if (r.duration_ns <= 0) r.duration_ns = 1;
  const double seconds = static_cast<double>(r.duration_ns) / 1e9;
  r.offered_bps = static_cast<double>(r.bytes) * 8 / seconds;
  if (auto per_src = header_int(r.header, "load_bps_per_src")) {
    // A per-source file ({src} output) holds one source's flows.
    const auto sources = r.header.get("src").value_or("");
    const auto count =
        sources.empty() || r.header.get("file_src") ? 1 : std::count(sources.begin(), sources.end(), ',') + 1;
    r.target_bps = static_cast<double>(*per_src) * static_cast<double>(count);
  }
  if (r.flows) {
    r.mean_size_bytes = static_cast<double>(r.bytes) / static_cast<double>(r.flows);
    r.size_min = sizes.quantile(0);
    r.size_p50 = sizes.quantile(0.5);
    r.size_p90 = sizes.quantile(0.9);
    r.size_p99 = sizes.quantile(0.99);
    r.size_p999 = sizes.quantile(0.999);
    r.size_max = sizes.quantile(1);
  }
  for (auto& b : binners) r.windows.push_back(b.finish(r.duration_ns));
  if (burst) {
    BurstLoad b;
    b.width_ns = *width;
    b.period_ns = *period;
    const std::int64_t full = r.duration_ns / *period;
    const std::int64_t tail = std::min(r.duration_ns % *period, *width);
    const std::int64_t burst_time = full * *width + tail;
    b.burst_windows = static_cast<std::uint64_t>(full + (tail > 0 ? 1 : 0));
    b.burst_bps = burst_time > 0 ? static_cast<double>(burst_bytes) * 8e9 / static_cast<double>(burst_time) : 0;
    const std::int64_t rest_time = r.duration_ns - burst_time;
    b.rest_bps = rest_time > 0 ? static_cast<double>(r.bytes - burst_bytes) * 8e9 / static_cast<double>(rest_time) : 0;
    b.burst_vs_mean = r.offered_bps > 0 ? b.burst_bps / r.offered_bps : 0;
    b.rest_vs_mean = r.offered_bps > 0 ? b.rest_bps / r.offered_bps : 0;
    if (burst_index >= 0) min_burst_flows = std::min(min_burst_flows, burst_flows);
    b.min_flows_per_burst = bursts_seen < b.burst_windows ? 0 : min_burst_flows;
    r.burst = b;
  }
  return r;
}

void print_report(const InspectReport& r, std::ostream& out) {
  out << fmt::format("# schedule {}\n#", r.source);
  for (const auto& [key, value] : r.header.params) out << fmt::format(" {}={}", key, value);
  out << "\n";
  const auto line = [&](std::string_view name, const std::string& value) {
    out << fmt::format("  {:<22} {}\n", name, value);
  };
  line("flows", fmt::format("{}", r.flows));
  line("bytes", fmt::format("{} ({})", r.bytes, format_bytes(static_cast<double>(r.bytes))));
  line("duration", format_duration(r.duration_ns));
  line("first/last start", fmt::format("{} / {}", format_duration(r.first_start_ns), format_duration(r.last_start_ns)));
  if (r.target_bps > 0) {
    line("target load", format_rate(r.target_bps));
    line("offered load",
         fmt::format("{} ({:+.2f}% vs target)", format_rate(r.offered_bps), (r.offered_bps / r.target_bps - 1) * 100));
  } else {
    line("offered load", format_rate(r.offered_bps));
  }
  line("mean size", fmt::format("{:.0f} B ({})", r.mean_size_bytes, format_bytes(r.mean_size_bytes)));
  line("size p50/p90/p99", fmt::format("{:.0f} / {:.0f} / {:.0f} B", r.size_p50, r.size_p90, r.size_p99));
  line("size p99.9/min/max", fmt::format("{:.0f} / {:.0f} / {:.0f} B", r.size_p999, r.size_min, r.size_max));
  if (r.burst) {
    const auto& b = *r.burst;
    line("burst grid", fmt::format("{} every {} ({} windows)", format_duration(b.width_ns),
                                   format_duration(b.period_ns), b.burst_windows));
    line("burst-window load", fmt::format("{} ({:.3f}x mean)", format_rate(b.burst_bps), b.burst_vs_mean));
    line("rest load", fmt::format("{} ({:.3f}x mean)", format_rate(b.rest_bps), b.rest_vs_mean));
    line("min flows per burst", fmt::format("{}", b.min_flows_per_burst));
  }
  out << "\n";
  Table windows({{"window_us", 0},
                 {"windows", 0},
                 {"mean_gbps", 4},
                 {"p50_gbps", 4},
                 {"p99_gbps", 4},
                 {"max_gbps", 4},
                 {"cv", 3},
                 {"empty_pct", 1}});
  for (const auto& w : r.windows) {
    windows.add_row({static_cast<double>(w.window_ns) / 1e3, w.windows, w.mean_bps / 1e9, w.p50_bps / 1e9,
                     w.p99_bps / 1e9, w.max_bps / 1e9, w.cv, w.empty_share * 100});
  }
  windows.print(out);
  out << "\n";
  Table hosts({{"direction", 0}, {"host", 0}, {"flows", 0}, {"bytes", 0}, {"offered_gbps", 4}});
  const double seconds = static_cast<double>(r.duration_ns) / 1e9;
  constexpr std::size_t kMaxHosts = 32;
  for (const auto* side : {&r.by_src, &r.by_dst}) {
    std::size_t shown = 0;
    for (const auto& [host, load] : *side) {
      if (shown++ == kMaxHosts) break;
      hosts.add_row({std::string(side == &r.by_src ? "src" : "dst"), host, load.flows, load.bytes,
                     static_cast<double>(load.bytes) * 8 / seconds / 1e9});
    }
  }
  hosts.print(out);
  if (r.by_src.size() > kMaxHosts || r.by_dst.size() > kMaxHosts) {
    out << fmt::format("  (first {} hosts per direction shown; --json has all)\n", kMaxHosts);
  }
  if (!r.flows_by_dscp.empty() || !r.flows_by_rate.empty()) {
    out << "\n";
    Table classes({{"class", 0}, {"value", 0}, {"flows", 0}, {"share_pct", 2}});
    for (const auto& [dscp, flows] : r.flows_by_dscp) {
      classes.add_row({std::string("dscp"), static_cast<std::uint64_t>(dscp), flows,
                       100.0 * static_cast<double>(flows) / static_cast<double>(r.flows)});
    }
    for (const auto& [rate, flows] : r.flows_by_rate) {
      classes.add_row(
          {std::string("rate_bps"), rate, flows, 100.0 * static_cast<double>(flows) / static_cast<double>(r.flows)});
    }
    classes.print(out);
  }
}

nlohmann::json to_json(const InspectReport& r) {
  nlohmann::json j;
  j["format_version"] = kInspectFormatVersion;
  j["source"] = r.source;
  auto& header = j["header"] = nlohmann::json::object();
  for (const auto& [key, value] : r.header.params) header[key] = value;
  j["flows"] = r.flows;
  j["bytes"] = r.bytes;
  j["duration_ns"] = r.duration_ns;
  j["first_start_ns"] = r.first_start_ns;
  j["last_start_ns"] = r.last_start_ns;
  j["target_bps"] = r.target_bps;
  j["offered_bps"] = r.offered_bps;
  j["mean_size_bytes"] = r.mean_size_bytes;
  j["size_bytes"] = {{"min", r.size_min}, {"p50", r.size_p50},   {"p90", r.size_p90},
                     {"p99", r.size_p99}, {"p999", r.size_p999}, {"max", r.size_max}};
  auto& windows = j["windows"] = nlohmann::json::array();
  for (const auto& w : r.windows) {
    windows.push_back({{"window_ns", w.window_ns},
                       {"windows", w.windows},
                       {"mean_bps", w.mean_bps},
                       {"p50_bps", w.p50_bps},
                       {"p99_bps", w.p99_bps},
                       {"max_bps", w.max_bps},
                       {"cv", w.cv},
                       {"empty_share", w.empty_share}});
  }
  if (r.burst) {
    const auto& b = *r.burst;
    j["burst"] = {{"width_ns", b.width_ns},           {"period_ns", b.period_ns},
                  {"burst_windows", b.burst_windows}, {"burst_bps", b.burst_bps},
                  {"rest_bps", b.rest_bps},           {"burst_vs_mean", b.burst_vs_mean},
                  {"rest_vs_mean", b.rest_vs_mean},   {"min_flows_per_burst", b.min_flows_per_burst}};
  }
  for (const auto& [side, map] : {std::pair{"by_src", &r.by_src}, std::pair{"by_dst", &r.by_dst}}) {
    auto& hosts = j[side] = nlohmann::json::object();
    for (const auto& [host, load] : *map) hosts[host] = {{"flows", load.flows}, {"bytes", load.bytes}};
  }
  if (!r.flows_by_dscp.empty()) {
    for (const auto& [dscp, flows] : r.flows_by_dscp) j["flows_by_dscp"][std::to_string(dscp)] = flows;
  }
  if (!r.flows_by_rate.empty()) {
    for (const auto& [rate, flows] : r.flows_by_rate) j["flows_by_rate_bps"][std::to_string(rate)] = flows;
  }
  return j;
}

}  // namespace xtk
