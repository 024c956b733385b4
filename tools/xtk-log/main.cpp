// xtk-log: records what the network did during a run: NIC, RDMA and kernel
// counters at millisecond resolution (counters), and packet headers or their
// per-flow binned series (capture). The work is in lib/capture.
#include <unistd.h>

#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "capture/counter_source.hpp"
#include "capture/live_capture.hpp"
#include "capture/sampler.hpp"
#include "core/cli.hpp"
#include "core/report.hpp"
#include "core/signals.hpp"
#include "core/units.hpp"

namespace {

namespace cap = xtk::capture;

struct CounterFlags {
  std::vector<std::string> sources;
  std::string period = "1ms", duration = "0", slow, spin = "0", wake_latency, out = "counters.csv";
  int cpu = -1, fifo = 0;
  bool list = false, json = false;
};

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
                     o.cpu_wake_latency_ns >= 0 ? xtk::format_duration(o.cpu_wake_latency_ns) : "as is");
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
          {"vanished", r.vanished}};
}

void run_counters(const CounterFlags& f) {
  if (f.list) {
    xtk::Table t({{"source"}, {"counter"}});
    std::vector<std::unique_ptr<cap::CounterSource>> sources;
    if (f.sources.empty()) {
      sources = cap::open_all_sources();
    } else {
      for (const auto& s : f.sources) {
        for (auto& source : cap::open_sources(cap::parse_source_spec(s))) sources.push_back(std::move(source));
      }
    }
    for (const auto& s : sources) {
      for (const auto& c : s->counters()) t.add_row({s->name(), c});
    }
    if (f.json) {
      std::cout << t.to_json().dump() << '\n';
    } else {
      t.print(std::cout);
    }
    return;
  }
  std::vector<std::unique_ptr<cap::CounterSource>> sources;
  const std::vector<std::string> specs = f.sources.empty() ? std::vector<std::string>{"net:*"} : f.sources;
  for (const auto& s : specs) {
    for (auto& source : cap::open_sources(cap::parse_source_spec(s))) sources.push_back(std::move(source));
  }
  cap::SamplerOptions o;
  o.period_ns = xtk::parse_flag("--period", f.period, xtk::parse_duration_ns);
  o.duration_ns = xtk::parse_flag("--duration", f.duration, xtk::parse_duration_ns);
  if (!f.slow.empty()) o.slow_ns = xtk::parse_flag("--slow-limit", f.slow, xtk::parse_duration_ns);
  if (f.fifo < 0 || f.fifo > 99) throw xtk::UsageError("--fifo: a priority from 1 to 99 (0 = off)");
  o.spin_ns = xtk::parse_flag("--spin", f.spin, xtk::parse_duration_ns);
  if (!f.wake_latency.empty()) {
    o.cpu_wake_latency_ns = xtk::parse_flag("--cpu-wake-latency", f.wake_latency, xtk::parse_duration_ns);
  }
  o.cpu = f.cpu;
  o.fifo_priority = f.fifo;
  o.out = f.out;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  o.header = {{"generator", std::string("xtk-log ") + XTK_VERSION}, {"host", host}};
  const auto report = cap::run_sampler(sources, o, xtk::stop_requested());
  std::ostream& out = f.out == "-" ? std::cerr : std::cout;
  if (f.json) {
    out << sampler_json(report).dump() << '\n';
  } else {
    print_sampler_report(report, out);
  }
  if (report.all_vanished) {
    throw xtk::Error(fmt::format("every source went away; the {} samples before are in {}", report.samples, f.out));
  }
}

struct CaptureFlags {
  std::vector<std::string> interfaces;
  std::string filter, tstamp, buffer = "256MiB", out, rotate_size, rotate_time, duration = "0", stats_every = "1s";
  std::string bin = "1ms", per = "flow";
  std::uint32_t snaplen = 128;
  bool no_promisc = false, summarize = false, json = false;
};

void run_capture(const CaptureFlags& f) {
  cap::CaptureOptions o;
  o.interfaces = f.interfaces;
  o.filter = f.filter;
  o.snaplen = f.snaplen;
  o.buffer_bytes = xtk::parse_flag("--buffer", f.buffer, xtk::parse_bytes);
  o.tstamp = f.tstamp;
  o.promiscuous = !f.no_promisc;
  o.summarize = f.summarize;
  o.out = !f.out.empty() ? f.out : f.summarize ? "trace-bins.csv" : "capture.pcap";
  if (!f.rotate_size.empty()) o.rotate_bytes = xtk::parse_flag("--rotate-size", f.rotate_size, xtk::parse_bytes);
  if (!f.rotate_time.empty()) o.rotate_ns = xtk::parse_flag("--rotate-time", f.rotate_time, xtk::parse_duration_ns);
  if (f.summarize && (o.rotate_bytes > 0 || o.rotate_ns > 0)) {
    throw xtk::UsageError("--rotate-size/--rotate-time: --summarize writes no packets to rotate");
  }
  o.duration_ns = xtk::parse_flag("--duration", f.duration, xtk::parse_duration_ns);
  o.stats_every_ns = xtk::parse_flag("--stats-every", f.stats_every, xtk::parse_duration_ns);
  o.bin_ns = xtk::parse_flag("--bin", f.bin, xtk::parse_duration_ns);
  o.per = cap::parse_bin_key(f.per);
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
                          {"interfaces", interfaces}}
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

  CounterFlags c;
  auto* counters = app.add_subcommand("counters", "sample counters on absolute deadlines into a counter file");
  counters->add_option("-s,--source", c.sources,
                       "SOURCE[=GLOB,...]: net:IF, ethtool:IF, rdma:DEV[/PORT], snmp; IF and DEV may be globs; "
                       "repeatable (default net:*, every interface but lo)");
  counters->add_option("--period", c.period, "sampling period (down to 10us)")->capture_default_str();
  counters->add_option("-t,--duration", c.duration, "run length (0 = until SIGINT/SIGTERM)")->capture_default_str();
  counters->add_option("-o,--out", c.out, "counter file ('-' = stdout)")->capture_default_str();
  counters->add_option("--slow-limit", c.slow, "flag samples whose reads took longer (default max(50us, period/10))");
  counters->add_option("--cpu", c.cpu, "pin the sampling thread to this CPU");
  counters->add_option("--fifo", c.fifo, "SCHED_FIFO priority 1-99 for the sampling thread (root)");
  counters->add_option("--spin", c.spin, "wake this long before each deadline and spin to it: precise, costs CPU")
      ->capture_default_str();
  counters->add_option("--cpu-wake-latency", c.wake_latency,
                       "while sampling, keep every CPU out of idle states slower than this to leave "
                       "(PM QoS; 0 = idle CPUs poll): sleeps end on time, the machine draws more power (root)");
  counters->add_flag("--list", c.list, "list the sources and counters found (with -s: those it selects) and exit");
  counters->add_flag("--json", c.json, "the end report (or --list) as JSON");

  CaptureFlags p;
  auto* capture = app.add_subcommand("capture", "capture packet headers with libpcap into pcap files, or --summarize");
  capture->add_option("-i,--interface", p.interfaces, "interface to capture on; repeatable (one thread each)")
      ->required();
  capture->add_option("-f,--filter", p.filter, "BPF filter, as tcpdump takes it");
  capture->add_option("-s,--snaplen", p.snaplen, "bytes kept of each packet (headers need about 100)")
      ->capture_default_str();
  capture->add_option("-B,--buffer", p.buffer, "kernel ring size per interface")->capture_default_str();
  capture->add_option("--tstamp", p.tstamp, "time stamp type: host, adapter (NIC hardware clock), adapter_unsynced");
  capture->add_flag("--no-promisc", p.no_promisc, "do not put the interface in promiscuous mode");
  capture->add_option("-o,--out", p.out,
                      "output file ('-' = stdout): {if} = interface, {n} = rotation index (default capture.pcap, with "
                      "--summarize trace-bins.csv)");
  capture->add_option("--rotate-size", p.rotate_size, "start a new file when one reaches this size (1GiB)");
  capture->add_option("--rotate-time", p.rotate_time, "start a new file when one spans this long (60s)");
  capture->add_option("-t,--duration", p.duration, "run length (0 = until SIGINT/SIGTERM)")->capture_default_str();
  capture->add_option("--stats-every", p.stats_every, "print packets and drops this often on stderr (0 = never)")
      ->capture_default_str();
  capture->add_flag("--summarize", p.summarize, "keep per-flow bytes and packets per bin only; write no packets");
  capture->add_option("--bin", p.bin, "--summarize: bin width")->capture_default_str();
  capture->add_option("--per", p.per, "--summarize: bins per flow or per direction (host to host)")
      ->capture_default_str();
  capture->add_flag("--json", p.json, "the end report as JSON");

  return xtk::run_tool(app, argc, argv, [&] {
    xtk::stop_requested();  // SIGINT/SIGTERM end the run cleanly from here on
    if (counters->parsed()) run_counters(c);
    if (capture->parsed()) run_capture(p);
  });
}
