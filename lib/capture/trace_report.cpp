#include "capture/trace_report.hpp"

#include <fmt/format.h>

#include "capture/dissector.hpp"
#include "core/units.hpp"

namespace xtk::capture {
namespace {

std::string linktype_list(const TraceResult& r) {
  std::vector<std::string> names;
  for (std::uint32_t l : r.linktypes) names.push_back(linktype_name(l));
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

Table trace_flow_table(const TraceResult& r, std::size_t top) {
  Table t(
      {{"flow"}, {"src"}, {"dst"}, {"first_ns"}, {"last_ns"}, {"bytes"}, {"packets"}, {"mean_bps", 0}, {"ce_packets"}});
  const std::size_t n = top > 0 ? std::min(top, r.flows.size()) : r.flows.size();
  for (std::size_t i = 0; i < n; ++i) {
    const FlowRow& f = r.flows[i];
    t.add_row({f.flow, f.src, f.dst, f.stats.first_ns, f.stats.last_ns, f.stats.bytes, f.stats.packets, f.mean_bps,
               f.stats.ce_packets});
  }
  return t;
}

Table trace_histogram_table(const TraceResult& r) {
  Table t({{"from_bps", 0}, {"to_bps", 0}, {"bins"}, {"share", 4}, {"cumulative_share", 4}});
  std::uint64_t total = 0;
  for (const auto& b : r.histogram) total += b.count;
  std::uint64_t running = 0;
  for (const auto& b : r.histogram) {
    running += b.count;
    const double share = total > 0 ? static_cast<double>(b.count) / static_cast<double>(total) : 0;
    const double cumulative = total > 0 ? static_cast<double>(running) / static_cast<double>(total) : 0;
    t.add_row({b.from_bps, b.to_bps, b.count, share, cumulative});
  }
  return t;
}

void print_trace_summary(const TraceResult& r, std::ostream& out) {
  const double span_s = static_cast<double>(r.trace_last_ns - r.trace_first_ns) * 1e-9;
  out << fmt::format("trace: {} file{} ({}, snaplen {}), {} packets, {} on the wire, {:.3f} s\n", r.files.size(),
                     r.files.size() == 1 ? "" : "s", linktype_list(r), r.snaplen, r.packets_read,
                     format_bytes(static_cast<double>(r.bytes_read)), r.packets_read > 0 ? span_s : 0.0);
  if (r.window_from_ns != r.trace_first_ns || r.window_to_ns != r.trace_last_ns + 1) {
    out << fmt::format("window: {:+.6f} s to {:+.6f} s from the first packet\n",
                       static_cast<double>(r.window_from_ns - r.trace_first_ns) * 1e-9,
                       static_cast<double>(r.window_to_ns - r.trace_first_ns) * 1e-9);
  }
  const double selected_s = static_cast<double>(r.last_ns - r.first_ns) * 1e-9;
  out << fmt::format("selected: {} packets, {} in {} flows, {} over {:.3f} s\n", r.packets,
                     format_bytes(static_cast<double>(r.bytes)), r.flows.size(),
                     selected_s > 0 ? format_rate(static_cast<double>(r.bytes) * 8 / selected_s) : "-", selected_s);
  out << fmt::format(
      "packets: {} not IP, {} with headers cut by the snaplen, {} malformed, {} IP fragments, {} late "
      "(older than the reorder window)\n",
      r.not_ip, r.cut, r.malformed, r.fragments, r.late);
  if (r.rate_bins > 0) {
    out << fmt::format("rate per {} bin{}: mean {}, p50 {}, p99 {}, max {} ({} bins)\n", format_duration(r.bin_ns),
                       r.smooth_bins > 1 ? fmt::format(", moving average of {}", r.smooth_bins) : "",
                       format_rate(r.rate_mean_bps), format_rate(r.rate_p50_bps), format_rate(r.rate_p99_bps),
                       format_rate(r.rate_max_bps), r.rate_bins);
  }
  if (r.damage) out << "DAMAGED: " << *r.damage << "; the results cover the packets before it\n";
}

nlohmann::json trace_json(const TraceResult& r, std::size_t top) {
  nlohmann::json linktypes = nlohmann::json::array();
  for (std::uint32_t l : r.linktypes) linktypes.push_back(linktype_name(l));
  nlohmann::json summary{
      {"files", r.files},
      {"linktypes", linktypes},
      {"snaplen", r.snaplen},
      {"packets_read", r.packets_read},
      {"bytes_read", r.bytes_read},
      {"trace_first_ns", r.trace_first_ns},
      {"trace_last_ns", r.trace_last_ns},
      {"window_from_ns", r.window_from_ns},
      {"window_to_ns", r.window_to_ns},
      {"packets", r.packets},
      {"bytes", r.bytes},
      {"first_ns", r.first_ns},
      {"last_ns", r.last_ns},
      {"flows", r.flows.size()},
      {"not_ip_packets", r.not_ip},
      {"cut_packets", r.cut},
      {"malformed_packets", r.malformed},
      {"fragment_packets", r.fragments},
      {"late_packets", r.late},
      {"bin_ns", r.bin_ns},
      {"smooth_bins", r.smooth_bins},
      {"rate_bins", r.rate_bins},
      {"rate_mean_bps", r.rate_mean_bps},
      {"rate_p50_bps", r.rate_p50_bps},
      {"rate_p99_bps", r.rate_p99_bps},
      {"rate_max_bps", r.rate_max_bps},
      {"damage", r.damage ? nlohmann::json(*r.damage) : nlohmann::json(nullptr)},
  };
  return {{"format_version", 1},
          {"summary", summary},
          {"flows", trace_flow_table(r, top).to_json()},
          {"histogram", trace_histogram_table(r).to_json()}};
}

}  // namespace xtk::capture
