#include "capture_commands.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "capture/counter_rates.hpp"
#include "capture/trace.hpp"
#include "capture/trace_report.hpp"
#include "core/error.hpp"
#include "core/provenance.hpp"
#include "core/units.hpp"

namespace {

namespace cap = xtk::capture;

struct TraceFlags {
  std::vector<std::string> files, hosts, srcs, dsts;
  std::string bin = "1ms", per = "flow", out, series, from, to, filter, hist_step, reorder = "100ms";
  std::size_t smooth = 1, top = 0;
  bool histogram = false, csv = false, json = false, top_given = false;
};

struct CounterFlags {
  std::string file, out, from, to;
  std::vector<std::string> sources{"*"}, names{"*"};
  bool csv = false, json = false;
};

std::int64_t duration_flag(const std::string& text, std::string_view flag) {
  try {
    return xtk::parse_duration_ns(text);
  } catch (const xtk::UsageError& e) {
    throw xtk::UsageError(fmt::format("{}: {}", flag, e.what()));
  }
}

std::vector<cap::Address> addresses(const std::vector<std::string>& texts, std::string_view flag) {
  std::vector<cap::Address> out;
  for (const auto& t : texts) {
    try {
      out.push_back(cap::parse_address(t));
    } catch (const xtk::UsageError& e) {
      throw xtk::UsageError(fmt::format("{}: {}", flag, e.what()));
    }
  }
  return out;
}

void run_trace(const TraceFlags& f) {
  cap::TraceOptions o;
  o.files = f.files;
  o.bin_ns = duration_flag(f.bin, "--bin");
  o.per = cap::parse_bin_key(f.per);
  o.reorder_ns = duration_flag(f.reorder, "--reorder-window");
  if (!f.from.empty()) o.from = cap::parse_time_bound(f.from, "--from");
  if (!f.to.empty()) o.to = cap::parse_time_bound(f.to, "--to");
  o.hosts = addresses(f.hosts, "--host");
  o.srcs = addresses(f.srcs, "--src");
  o.dsts = addresses(f.dsts, "--dst");
  o.filter = f.filter;
  if (f.smooth < 1) throw xtk::UsageError("--smooth: at least 1 bin");
  o.smooth_bins = f.smooth;
  if (!f.hist_step.empty()) {
    try {
      o.histogram_step_bps = xtk::parse_rate_bps(f.hist_step);
    } catch (const xtk::UsageError& e) {
      throw xtk::UsageError(fmt::format("--hist-step: {}", e.what()));
    }
    if (!(o.histogram_step_bps > 0)) throw xtk::UsageError("--hist-step: must be above 0");
  }
  o.bins_path = f.out;
  o.series_path = f.series;
  if (o.bins_path == "-" && o.series_path == "-") throw xtk::UsageError("-o and --series cannot both be stdout");

  const auto result = cap::analyze_trace(o);
  // Files on stdout leave no room for the report there.
  std::ostream& out = (o.bins_path == "-" || o.series_path == "-") ? std::cerr : std::cout;
  const std::size_t top = f.top_given ? f.top : (f.csv || f.json) ? 0 : 20;
  if (f.json) {
    out << xtk::with_provenance(cap::trace_json(result, top)).dump() << '\n';
  } else if (f.csv) {
    (f.histogram ? cap::trace_histogram_table(result) : cap::trace_flow_table(result, top)).write_csv(out);
  } else {
    cap::print_trace_summary(result, out);
    out << '\n';
    if (f.histogram) {
      out << fmt::format("injection rate per {} bin{}, {} bins:\n", xtk::format_duration(result.bin_ns),
                         result.smooth_bins > 1 ? fmt::format(" (moving average of {})", result.smooth_bins) : "",
                         result.rate_bins);
      cap::trace_histogram_table(result).print(out);
    } else {
      cap::trace_flow_table(result, top).print(out);
      if (top > 0 && result.flows.size() > top) {
        out << fmt::format("({} more flows; --top 0 shows all)\n", result.flows.size() - top);
      }
    }
  }
  if (result.damage) throw xtk::Error(*result.damage + " (the results above stop there)");
}

void run_counters(const CounterFlags& f) {
  cap::CounterRateOptions o;
  o.sources = f.sources;
  o.names = f.names;
  if (!f.from.empty()) o.from = cap::parse_time_bound(f.from, "--from");
  if (!f.to.empty()) o.to = cap::parse_time_bound(f.to, "--to");
  o.rates_path = f.out;
  const auto result = cap::analyze_counters(f.file, o);
  std::ostream& out = f.out == "-" ? std::cerr : std::cout;
  if (f.json) {
    out << xtk::with_provenance(cap::counter_rate_json(result)).dump() << '\n';
  } else if (f.csv) {
    cap::counter_rate_table(result).write_csv(out);
  } else {
    out << fmt::format(
        "{}: {} rows, {:.3f} s{}\n", result.path, result.rows,
        static_cast<double>(result.last_t_ns - result.first_t_ns) * 1e-9,
        result.period_ns > 0 ? fmt::format(", sampled every {}", xtk::format_duration(result.period_ns)) : "");
    cap::counter_rate_table(result).print(out);
  }
}

}  // namespace

std::function<void()> add_capture_commands(CLI::App& app) {
  auto t = std::make_shared<TraceFlags>();
  auto* trace = app.add_subcommand(
      "trace", "pcap/pcapng files into per-flow totals, per-bin bytes (--bin -o), rate series and histogram");
  trace->add_option("files", t->files, "capture files, merged in time order ('-' = stdin, pcap only)")->required();
  trace->add_option("--bin", t->bin, "bin width of the bins, series and histogram")->capture_default_str();
  trace->add_option("--per", t->per, "bins per flow, or per direction (every packet from one host to another)")
      ->capture_default_str();
  trace->add_option("-o,--out", t->out, "write bytes and packets per bin per flow/direction here (xtk-trace-bins)");
  trace->add_option("--series", t->series, "write the selected traffic's rate every bin here (xtk-trace-series)");
  trace->add_option("--smooth", t->smooth, "moving average over N bins for the series and histogram")
      ->capture_default_str();
  trace->add_flag("--histogram", t->histogram, "show the histogram of the injection rate instead of the flows");
  trace->add_option("--hist-step", t->hist_step,
                    "histogram bucket width (500M); default: 1, 2 or 5 x 10^k, <= 25 buckets");
  trace->add_option("--from", t->from, "start of the window: from the first packet (2s) or @ABSOLUTE_NS (realtime)");
  trace->add_option("--to", t->to, "end of the window, likewise");
  trace->add_option("--host", t->hosts, "only packets from or to this address; repeatable");
  trace->add_option("--src", t->srcs, "only packets from this address; repeatable");
  trace->add_option("--dst", t->dsts, "only packets to this address; repeatable");
  trace->add_option("-f,--filter", t->filter, "only packets matching this BPF filter (tcpdump syntax)");
  trace->add_option("--reorder-window", t->reorder, "bins stay open this long for out-of-order packets")
      ->capture_default_str();
  trace->add_option("--top", t->top, "flows shown, largest first (default 20 in the table, all in CSV/JSON; 0 = all)")
      ->each([t](const std::string&) { t->top_given = true; });
  trace->add_flag("--csv", t->csv, "the flow table (or --histogram) as CSV");
  trace->add_flag("--json", t->json, "one JSON document: summary, flows and histogram");

  auto c = std::make_shared<CounterFlags>();
  auto* counters = app.add_subcommand("counters", "a counter file from xtk-log into rates per interval");
  counters->add_option("file", c->file, "counter file ('-' = stdin)")->required();
  counters->add_option("--source", c->sources, "only sources matching these globs (net:eth0, rdma:*)");
  counters->add_option("--name", c->names, "only counters matching these globs (rx_bytes, *pause*)");
  counters->add_option("--from", c->from, "start: from the first sample (2s) or @ABSOLUTE_NS (realtime)");
  counters->add_option("--to", c->to, "end, likewise");
  counters->add_option("-o,--out", c->out, "write every interval's rate here (xtk-counter-rates CSV)");
  counters->add_flag("--csv", c->csv, "the summary as CSV");
  counters->add_flag("--json", c->json, "the summary as JSON");

  return [trace, counters, t, c] {
    if (trace->parsed()) run_trace(*t);
    if (counters->parsed()) run_counters(*c);
  };
}
