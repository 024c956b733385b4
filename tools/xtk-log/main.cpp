// xtk-log: records what the network did during a run: NIC, RDMA and kernel
// counters at millisecond resolution (counters), and packet headers or their
// per-flow binned series (capture). The work is in lib/capture.
#include <unistd.h>

#include <fmt/format.h>

#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "capture/counter_source.hpp"
#include "capture/log_flags.hpp"
#include "core/cli.hpp"
#include "core/report.hpp"
#include "core/signals.hpp"
#include "core/units.hpp"

namespace {

namespace cap = xtk::capture;

std::string us(double ns) { return fmt::format("{:.1f} us", ns / 1e3); }

void print_sampler_report(const cap::SamplerReport& r, std::ostream& out) {
  out << fmt::format("xtk-log counters: {} samples of {} counters every {} into {} ({} rows, {:.3f} s)\n", r.samples,
                     r.counters, xtk::format_duration(r.options.period_ns), r.options.out, r.rows,
                     static_cast<double>(r.wall_ns) * 1e-9);
  if (r.interval_ns.count() > 0) {
    out << fmt::format("  interval            p50 {}  p99 {}  max {}\n", us(r.interval_ns.quantile(0.5)),
                       us(r.interval_ns.quantile(0.99)), us(r.interval_ns.quantile(1)));
    out << fmt::format("  |interval - period| p50 {}  p99 {}  max {}\n", us(r.error_ns.quantile(0.5)),
                       us(r.error_ns.quantile(0.99)), us(r.error_ns.quantile(1)));
  }
  if (r.samples > 0) {
    out << fmt::format("  wake-up late        p50 {}  p99 {}  max {}\n", us(r.late_ns.quantile(0.5)),
                       us(r.late_ns.quantile(0.99)), us(r.late_ns.quantile(1)));
    out << fmt::format("  reads               p50 {}  p99 {}  max {}\n", us(r.read_ns.quantile(0.5)),
                       us(r.read_ns.quantile(0.99)), us(r.read_ns.quantile(1)));
  }
  out << fmt::format("  slow samples {} (reads over {}), missed deadlines {}, CPU {:.2f} % of one core\n", r.slow,
                     xtk::format_duration(r.slow_ns), r.missed, r.cpu_percent);
  const auto& o = r.options;
  out << fmt::format("  scheduling: cpu {}, fifo {}, spin {}, cpu wake latency {}\n",
                     o.cpu >= 0 ? std::to_string(o.cpu) : "any",
                     o.fifo_priority > 0 ? std::to_string(o.fifo_priority) : "off", xtk::format_duration(o.spin_ns),
                     o.cpu_wake_latency_ns >= 0 ? r.wake_latency : "as is");
  if (r.polling_cpu_percent > 0) {
    out << fmt::format("  idle polling for the wake latency: CPU {:.2f} % of one core (not in the sampler's)\n",
                       r.polling_cpu_percent);
  }
  for (const auto& v : r.vanished) out << "  gone: " << v << '\n';
}

nlohmann::json sampler_json(const cap::SamplerReport& r) {
  auto q = [](const xtk::LogHistogram& h, double p) { return h.count() > 0 ? h.quantile(p) : 0.0; };
  return {{"format_version", 1},
          {"out", r.options.out},
          {"period_ns", r.options.period_ns},
          {"slow_limit_ns", r.slow_ns},
          {"cpu", r.options.cpu},
          {"fifo_priority", r.options.fifo_priority},
          {"spin_ns", r.options.spin_ns},
          {"cpu_wake_latency_ns", r.options.cpu_wake_latency_ns},
          {"cpu_wake_latency", r.wake_latency},
          {"samples", r.samples},
          {"counters", r.counters},
          {"rows", r.rows},
          {"wall_ns", r.wall_ns},
          {"interval_p50_ns", q(r.interval_ns, 0.5)},
          {"interval_p99_ns", q(r.interval_ns, 0.99)},
          {"interval_max_ns", q(r.interval_ns, 1)},
          {"error_p50_ns", q(r.error_ns, 0.5)},
          {"error_p99_ns", q(r.error_ns, 0.99)},
          {"error_max_ns", q(r.error_ns, 1)},
          {"late_p50_ns", q(r.late_ns, 0.5)},
          {"late_p99_ns", q(r.late_ns, 0.99)},
          {"late_max_ns", q(r.late_ns, 1)},
          {"read_p50_ns", q(r.read_ns, 0.5)},
          {"read_p99_ns", q(r.read_ns, 0.99)},
          {"read_max_ns", q(r.read_ns, 1)},
          {"slow_samples", r.slow},
          {"missed_deadlines", r.missed},
          {"cpu_percent", r.cpu_percent},
          {"polling_cpu_percent", r.polling_cpu_percent},
          {"vanished", r.vanished}};
}

// The sources every -s names. One named twice would write each of its
// counters twice per sample, a file no reader takes.
std::vector<std::unique_ptr<cap::CounterSource>> open_specs(const std::vector<std::string>& specs) {
  std::vector<std::unique_ptr<cap::CounterSource>> sources;
  std::map<std::string, std::string> named_by;
  for (const auto& spec : specs) {
    for (auto& source : cap::open_sources(cap::parse_source_spec(spec))) {
      if (const auto [at, fresh] = named_by.emplace(source->name(), spec); !fresh) {
        throw xtk::UsageError(
            fmt::format("--source {}: {} is named by --source {} already: give each source once, "
                        "with all its counters after '=' (net:eth0=rx_bytes,tx_bytes)",
                        spec, source->name(), at->second));
      }
      sources.push_back(std::move(source));
    }
  }
  return sources;
}

void run_counters(const cap::CounterFlags& f) {
  if (f.list) {
    xtk::Table t({{"source"}, {"counter"}});
    const auto sources = f.sources.empty() ? cap::open_all_sources() : open_specs(f.sources);
    for (const auto& s : sources) {
      for (const auto& c : s->counters()) t.add_row({s->name(), c});
    }
    if (f.json) {
      std::cout << xtk::with_provenance({{"format_version", 1}, {"counters", t.to_json()}}).dump() << '\n';
    } else {
      t.print(std::cout);
    }
    return;
  }
  auto sources = open_specs(f.sources.empty() ? std::vector<std::string>{"net:*"} : f.sources);
  auto o = cap::to_options(f);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  o.header = {{"generator", std::string("xtk-log ") + XTK_VERSION}, {"host", host}};
  const auto report = cap::run_sampler(sources, o, xtk::stop_requested());
  std::ostream& out = f.out == "-" ? std::cerr : std::cout;
  if (f.json) {
    out << xtk::with_provenance(sampler_json(report)).dump() << '\n';
  } else {
    print_sampler_report(report, out);
  }
  if (report.all_vanished) {
    throw xtk::Error(fmt::format("every source went away; the {} samples before are in {}", report.samples, f.out));
  }
}

void run_capture(const cap::CaptureFlags& f) {
  const auto o = cap::to_options(f);
  const auto report = cap::run_capture(o, xtk::stop_requested());

  xtk::Table t({{"interface"},
                {"packets"},
                {"bytes"},
                {"received"},
                {"dropped"},
                {"if_dropped"},
                {"dropped_share", 6},
                {"files"}});
  for (const auto& i : report.interfaces) {
    const double share = i.received > 0 ? static_cast<double>(i.dropped) / static_cast<double>(i.received) : 0.0;
    t.add_row({i.interface, i.packets, i.bytes, i.received, i.dropped, i.if_dropped, share,
               fmt::format("{}", fmt::join(i.files, " "))});
  }
  std::ostream& out = o.out == "-" ? std::cerr : std::cout;  // stdout may carry the capture itself
  if (f.json) {
    auto interfaces = t.to_json();
    for (std::size_t k = 0; k < report.interfaces.size(); ++k) {
      interfaces[k]["files"] = report.interfaces[k].files;
      if (f.summarize) {
        interfaces[k]["flows"] = report.interfaces[k].flows;
        interfaces[k]["late_packets"] = report.interfaces[k].late;
      }
    }
    out << nlohmann::json{{"format_version", 1},
                          {"wall_ns", report.wall_ns},
                          {"start_realtime_ns", report.start_realtime_ns},
                          {"snaplen", f.snaplen},
                          {"interfaces", interfaces},
                          {"provenance", xtk::tool_provenance()}}
               .dump()
        << '\n';
    return;
  }
  out << fmt::format("xtk-log capture: {:.3f} s, snaplen {}{}\n", static_cast<double>(report.wall_ns) * 1e-9, f.snaplen,
                     f.summarize ? ", summarized" : "");
  t.print(out);
}

}  // namespace

// run_tool turns every exception into an exit status; CLI11's set-up throws only on programming errors.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "Record what the network does during a run: counters (NIC statistics, ethtool, RDMA, TCP) sampled every\n"
      "millisecond, and packet headers with libpcap (or only their per-flow series). Formats: docs/formats.md;\n"
      "guide: docs/capture.md.\n\n"
      "  xtk-log counters -s net:eth0 -s ethtool:eth0='rx_*_phy,tx_*_phy,*pause*' -o counters.csv\n"
      "  xtk-log capture -i eth0 --filter 'tcp or udp port 4791' -o capture.pcap --rotate-size 1GiB\n"
      "  xtk-log capture -i eth0 --summarize --bin 1ms -o trace-bins.csv",
      "xtk-log"};
  app.set_version_flag("--version", std::string("xtk-log ") + XTK_VERSION);
  app.require_subcommand(1);

  cap::CounterFlags c;
  auto* counters = app.add_subcommand("counters", "sample counters on absolute deadlines into a counter file");
  cap::add_flags(*counters, c);

  cap::CaptureFlags p;
  auto* capture = app.add_subcommand("capture", "capture packet headers with libpcap into pcap files, or --summarize");
  cap::add_flags(*capture, p);

  return xtk::run_tool(app, argc, argv, [&] {
    xtk::stop_requested();  // SIGINT/SIGTERM end the run cleanly from here on
    if (counters->parsed()) run_counters(c);
    if (capture->parsed()) run_capture(p);
  });
}
