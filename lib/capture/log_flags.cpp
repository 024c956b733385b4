#include "capture/log_flags.hpp"

#include <CLI/CLI.hpp>

#include "core/cli.hpp"
#include "core/units.hpp"

namespace xtk::capture {

void add_flags(CLI::App& app, CounterFlags& f) {
  app.add_option("-s,--source", f.sources,
                 "SOURCE[=GLOB,...]: net:IF, ethtool:IF, rdma:DEV[/PORT], snmp; IF and DEV may be globs; "
                 "repeatable (default net:*, every interface but lo); -s is --snaplen in xtk-log capture");
  app.add_option("--period", f.period, "sampling period (down to 10us)")->capture_default_str();
  app.add_option("-t,--duration", f.duration, "run length (0 = until SIGINT/SIGTERM)")->capture_default_str();
  app.add_option("-o,--out", f.out, "counter file ('-' = stdout)")->capture_default_str();
  app.add_option("--slow-limit", f.slow, "flag samples whose reads took longer (default max(50us, period/10))");
  app.add_option("--cpu", f.cpu, "pin the sampling thread to this CPU");
  app.add_option("--fifo", f.fifo, "SCHED_FIFO priority 1-99 for the sampling thread (root)");
  app.add_option("--spin", f.spin, "wake this long before each deadline and spin to it: precise, costs CPU")
      ->capture_default_str();
  app.add_option("--cpu-wake-latency", f.wake_latency,
                 "while sampling, keep every CPU out of idle states slower than this to leave "
                 "(PM QoS; 0 = idle CPUs poll; without a cpuidle driver, a SCHED_IDLE thread polls the sampler's "
                 "CPUs): sleeps end on time, the machine draws more power (root)");
  app.add_flag("--list", f.list, "list the sources and counters found (with -s: those it selects) and exit");
  app.add_flag("--json", f.json, "the end report (or --list) as JSON");
}

void add_flags(CLI::App& app, CaptureFlags& f) {
  app.add_option("-i,--interface", f.interfaces, "interface to capture on; repeatable (one thread each)")->required();
  app.add_option("-f,--filter", f.filter, "BPF filter, as tcpdump takes it");
  app.add_option("-s,--snaplen", f.snaplen,
                 "bytes kept of each packet (headers need about 100; -s is --source in xtk-log counters)")
      ->capture_default_str();
  app.add_option("-B,--buffer", f.buffer, "kernel ring size per interface")->capture_default_str();
  app.add_option("--tstamp", f.tstamp,
                 "time stamp type: host, host_lowprec, host_hiprec, adapter (NIC hardware clock), adapter_unsynced");
  app.add_flag("--no-promisc", f.no_promisc, "do not put the interface in promiscuous mode");
  app.add_option("-o,--out", f.out,
                 "output file ('-' = stdout): {if} = interface, {n} = rotation index (default capture.pcap, with "
                 "--summarize trace-bins.csv)");
  app.add_option("--rotate-size", f.rotate_size,
                 "start a new file when one reaches this size, e.g. 1GiB (default: one file)");
  app.add_option("--rotate-time", f.rotate_time,
                 "start a new file when one spans this long, e.g. 60s (default: one file)");
  app.add_option("-t,--duration", f.duration, "run length (0 = until SIGINT/SIGTERM)")->capture_default_str();
  app.add_option("--stats-every", f.stats_every, "print packets and drops this often on stderr (0 = never)")
      ->capture_default_str();
  app.add_flag("--summarize", f.summarize, "keep per-flow bytes and packets per bin only; write no packets");
  app.add_option("--bin", f.bin, "--summarize: bin width")->capture_default_str();
  app.add_option("--per", f.per, "--summarize: bins per flow or per direction (host to host)")->capture_default_str();
  app.add_flag("--json", f.json, "the end report as JSON");
}

std::vector<std::string> to_arguments(const CounterFlags& f) {
  const CounterFlags d;
  return Arguments()
      .word("counters")
      .each("--source", f.sources)
      .option("--period", f.period, d.period)
      .option("--duration", f.duration, d.duration)
      .option("--out", f.out, d.out)
      .option("--slow-limit", f.slow, d.slow)
      .option("--cpu", f.cpu, d.cpu)
      .option("--fifo", f.fifo, d.fifo)
      .option("--spin", f.spin, d.spin)
      .option("--cpu-wake-latency", f.wake_latency, d.wake_latency)
      .flag("--list", f.list)
      .flag("--json", f.json)
      .list();
}

std::vector<std::string> to_arguments(const CaptureFlags& f) {
  const CaptureFlags d;
  return Arguments()
      .word("capture")
      .each("--interface", f.interfaces)
      .option("--filter", f.filter, d.filter)
      .option("--snaplen", f.snaplen, d.snaplen)
      .option("--buffer", f.buffer, d.buffer)
      .option("--tstamp", f.tstamp, d.tstamp)
      .flag("--no-promisc", f.no_promisc)
      .option("--out", f.out, d.out)
      .option("--rotate-size", f.rotate_size, d.rotate_size)
      .option("--rotate-time", f.rotate_time, d.rotate_time)
      .option("--duration", f.duration, d.duration)
      .option("--stats-every", f.stats_every, d.stats_every)
      .flag("--summarize", f.summarize)
      .option("--bin", f.bin, d.bin)
      .option("--per", f.per, d.per)
      .flag("--json", f.json)
      .list();
}

SamplerOptions to_options(const CounterFlags& f) {
  SamplerOptions o;
  o.period_ns = parse_flag("--period", f.period, parse_duration_ns);
  o.duration_ns = parse_flag("--duration", f.duration, parse_duration_ns);
  if (!f.slow.empty()) o.slow_ns = parse_flag("--slow-limit", f.slow, parse_duration_ns);
  if (f.fifo < 0 || f.fifo > 99) throw UsageError("--fifo: a priority from 1 to 99 (0 = off)");
  o.spin_ns = parse_flag("--spin", f.spin, parse_duration_ns);
  if (!f.wake_latency.empty()) {
    o.cpu_wake_latency_ns = parse_flag("--cpu-wake-latency", f.wake_latency, parse_duration_ns);
  }
  o.cpu = f.cpu;
  o.fifo_priority = f.fifo;
  o.out = f.out;
  check_options(o);
  return o;
}

CaptureOptions to_options(const CaptureFlags& f) {
  CaptureOptions o;
  o.interfaces = f.interfaces;
  o.filter = f.filter;
  o.snaplen = f.snaplen;
  o.buffer_bytes = parse_flag("--buffer", f.buffer, parse_bytes);
  o.tstamp = f.tstamp;
  o.promiscuous = !f.no_promisc;
  o.summarize = f.summarize;
  o.out = !f.out.empty() ? f.out : f.summarize ? "trace-bins.csv" : "capture.pcap";
  if (!f.rotate_size.empty()) o.rotate_bytes = parse_flag("--rotate-size", f.rotate_size, parse_bytes);
  if (!f.rotate_time.empty()) o.rotate_ns = parse_flag("--rotate-time", f.rotate_time, parse_duration_ns);
  if (f.summarize && (o.rotate_bytes > 0 || o.rotate_ns > 0)) {
    throw UsageError("--rotate-size/--rotate-time: --summarize writes no packets to rotate");
  }
  o.duration_ns = parse_flag("--duration", f.duration, parse_duration_ns);
  o.stats_every_ns = parse_flag("--stats-every", f.stats_every, parse_duration_ns);
  o.bin_ns = parse_flag("--bin", f.bin, parse_duration_ns);
  o.per = parse_bin_key(f.per);
  return o;
}

}  // namespace xtk::capture
