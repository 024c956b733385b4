#include "flow/client_flags.hpp"

#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <sstream>

#include "core/cli.hpp"
#include "core/cpus.hpp"
#include "core/units.hpp"
#include "transport/transport.hpp"

namespace xtk {
namespace {

std::vector<std::string> split_commas(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::stringstream in(item);
    for (std::string part; std::getline(in, part, ',');) {
      if (!part.empty()) out.push_back(part);
    }
  }
  return out;
}

}  // namespace

void add_flags(CLI::App& app, ClientFlags& f) {
  app.add_option("schedule", f.schedule, "schedule file from xtk-gen ('-' = stdin)");
  app.add_option("-o,--records", f.records,
                 "flow records, CSV or JSON Lines by extension (.jsonl or .json); '-' = stdout")
      ->capture_default_str();
  app.add_option("--transport", f.transport,
                 fmt::format("how flows move: {} (docs/flow-engine.md)", fmt::join(transport_names(), ", ")))
      ->capture_default_str();
  // One value per occurrence: `--map h1=10.0.0.2 web.csv` must leave the schedule to the positional.
  app.add_option("--map", f.map, "NAME=ADDRESS[:PORT] for schedule destinations, repeatable or comma-separated")
      ->allow_extra_args(false);
  app.add_option("-p,--port", f.port, "server port for destinations given without one")->capture_default_str();
  app.add_option("-T,--threads", f.threads,
                 "worker threads, flows spread round-robin (0: 1 for a schedule; with --bulk N, N up to the CPUs "
                 "this process may use)")
      ->capture_default_str();
  app.add_option("--policy", f.policy, "pool (persistent connections) or per-flow (a new connection per flow)")
      ->capture_default_str();
  app.add_option("--pool-limit", f.pool_limit, "connections per destination per thread at most (both policies)")
      ->capture_default_str();
  app.add_option("--pool-init", f.pool_init,
                 "pool: spare connections per destination per thread: opened before the start for the schedule "
                 "header's "
                 "destinations, and kept open")
      ->capture_default_str();
  app.add_option("--pool-ahead", f.pool_ahead,
                 "pool: open a connection ahead for every flow due within this time, or within twice what recent "
                 "slow handshakes took when longer, up to 500 ms (0 = only --pool-init spares and that)")
      ->capture_default_str();
  app.add_option("--direction", f.direction, "push (client sends the bytes) or pull (servers send them)")
      ->capture_default_str();
  app.add_option("--spin", f.spin, "wake this long before a flow's start and spin to it")->capture_default_str();
  app.add_flag("--realtime,!--no-realtime", f.realtime,
               "SCHED_FIFO for the worker threads where permitted (root or CAP_SYS_NICE): on by default, "
               "--no-realtime for normal priority; never in bulk mode (docs/flow-engine.md#timing)");
  app.add_option("--cpus", f.cpus,
                 "worker CPUs: auto (the CPUs that take none of the flows' network interrupts, where those are "
                 "found), none (no pinning), or a list: worker i on the i-th CPU, e.g. 1,2 or 2-5")
      ->allow_extra_args(false)
      ->default_str("auto");
  app.add_option("--cpu-wake-latency", f.wake_latency,
                 "while running, keep every CPU out of idle states slower than this to leave (PM QoS; 0 = idle "
                 "CPUs poll; without a cpuidle driver, a SCHED_IDLE thread polls each worker CPU): wake-ups before "
                 "starts come on time, the machine draws more power. auto: 0 where permitted (root); none: leave "
                 "the machine as it is. Not in bulk mode")
      ->default_str("auto");
  app.add_option("--cc", f.congestion_control, "TCP congestion control, e.g. cubic, dctcp, bbr");
  app.add_option("--sndbuf", f.send_buffer, "SO_SNDBUF size, e.g. 4MiB (0 = the kernel's autotuning)")
      ->capture_default_str();
  app.add_option("--rcvbuf", f.receive_buffer, "SO_RCVBUF size, e.g. 4MiB (0 = the kernel's autotuning)")
      ->capture_default_str();
  app.add_flag("--no-nodelay", f.no_nodelay, "leave Nagle's algorithm on");
  app.add_flag("--no-io-uring", f.no_io_uring,
               "send each flow's first write at once; by default the flows that a worker's wake-up starts leave "
               "together in one io_uring call, where the kernel allows it (docs/flow-engine.md#send-batching)");
  app.add_option("--flow-timeout", f.flow_timeout,
                 "a flow not done this long after its start (a bulk stream: after --duration) ends as timeout")
      ->capture_default_str();
  app.add_option("--retry-for", f.retry,
                 "keep retrying an unreachable server this long, from each flow's scheduled start")
      ->capture_default_str();
  app.add_option("--grace", f.grace, "after SIGINT/SIGTERM, let flows in flight finish this long")
      ->capture_default_str();
  app.add_option("-t,--duration", f.duration, "run length (0 = the whole schedule); needed with --bulk")
      ->capture_default_str();
  app.add_option("--start-at", f.start_at, "wall-clock start (Unix seconds or ISO 8601 UTC), to start hosts together");
  app.add_option("--token", f.token, "pass phrase the servers require");
  app.add_option("--link", f.link, "link rate for the ideal FCT in slowdowns (default: the schedule's link_bps)");
  app.add_option("--bulk", f.bulk_streams, "bulk mode: this many long-lived streams to --dst");
  app.add_option("--dst", f.bulk_dst, "bulk mode: server address[:port]");
  app.add_option("--rate", f.bulk_rate, "bulk mode: pacing cap per stream (0 = none)")->capture_default_str();
  app.add_flag("--json", f.json, "summary as JSON (with the options and warnings)");
  app.add_flag("--no-progress", f.no_progress, "no live progress line on a terminal");
  add_flags(app, f.device);
}

std::vector<std::string> to_arguments(const ClientFlags& f) {
  const ClientFlags d;
  Arguments a;
  if (!f.schedule.empty()) a.word(f.schedule);
  add_arguments(a, f.device);
  return a.option("--records", f.records, d.records)
      .option("--transport", f.transport, d.transport)
      .each("--map", f.map)
      .option("--port", f.port, d.port)
      .option("--threads", f.threads, d.threads)
      .option("--policy", f.policy, d.policy)
      .option("--pool-limit", f.pool_limit, d.pool_limit)
      .option("--pool-init", f.pool_init, d.pool_init)
      .option("--pool-ahead", f.pool_ahead, d.pool_ahead)
      .option("--direction", f.direction, d.direction)
      .option("--spin", f.spin, d.spin)
      .flag("--no-realtime", !f.realtime)
      .each("--cpus", f.cpus)
      .option("--cpu-wake-latency", f.wake_latency, d.wake_latency)
      .option("--cc", f.congestion_control, d.congestion_control)
      .option("--sndbuf", f.send_buffer, d.send_buffer)
      .option("--rcvbuf", f.receive_buffer, d.receive_buffer)
      .flag("--no-nodelay", f.no_nodelay)
      .flag("--no-io-uring", f.no_io_uring)
      .option("--flow-timeout", f.flow_timeout, d.flow_timeout)
      .option("--retry-for", f.retry, d.retry)
      .option("--grace", f.grace, d.grace)
      .option("--duration", f.duration, d.duration)
      .option("--start-at", f.start_at, d.start_at)
      .option("--token", f.token, d.token)
      .option("--link", f.link, d.link)
      .option("--bulk", f.bulk_streams, d.bulk_streams)
      .option("--dst", f.bulk_dst, d.bulk_dst)
      .option("--rate", f.bulk_rate, d.bulk_rate)
      .flag("--json", f.json)
      .flag("--no-progress", f.no_progress)
      .list();
}

ClientOptions to_options(const ClientFlags& f) {
  ClientOptions o;
  o.schedule = f.schedule;
  o.records = f.records;
  o.transport = f.transport;
  o.device = to_settings(f.device);
  o.map = split_commas(f.map);
  if (f.port < 1 || f.port > 65535) throw UsageError(fmt::format("--port {}: a port is 1 to 65535", f.port));
  o.port = static_cast<std::uint16_t>(f.port);
  o.threads = f.threads;
  // Bulk streams flat out: one worker moving several of them is one CPU's
  // worth (over a veth pair the sender's CPU also does the receiver's packet
  // work), as iperf2 and iperf3 3.16 give each stream a thread.
  if (o.threads == 0) {
    o.threads = f.bulk_streams > 0
                    ? static_cast<unsigned>(std::clamp<std::size_t>(allowed_cpus().size(), 1, f.bulk_streams))
                    : 1;
  }
  o.pool_limit = f.pool_limit;
  o.pool_init = f.pool_init;
  const auto cpus = split_commas(f.cpus);
  if (cpus.empty() || cpus == std::vector<std::string>{"auto"}) {
    o.timing.pinning = CpuPinning::automatic;
  } else if (cpus == std::vector<std::string>{"none"}) {
    o.timing.pinning = CpuPinning::none;
  } else {
    o.timing.pinning = CpuPinning::list;
    for (const auto& word : {"auto", "none"}) {
      if (std::find(cpus.begin(), cpus.end(), word) != cpus.end()) {
        throw UsageError(fmt::format("--cpus: {} stands alone, not beside CPUs", word));
      }
    }
    for (const auto& item : cpus) {
      for (int cpu : parse_cpu_list(item, "--cpus")) o.timing.cpus.push_back(cpu);
    }
  }
  if (f.policy == "pool") {
    o.policy = ConnectionPolicy::pool;
  } else if (f.policy == "per-flow") {
    o.policy = ConnectionPolicy::per_flow;
  } else {
    throw UsageError(fmt::format("--policy: '{}' is neither pool nor per-flow", f.policy));
  }
  if (f.direction == "push") {
    o.direction = Direction::push;
  } else if (f.direction == "pull") {
    o.direction = Direction::pull;
  } else {
    throw UsageError(fmt::format("--direction: '{}' is neither push nor pull", f.direction));
  }
  o.timing.realtime = f.realtime;
  o.congestion_control = f.congestion_control;
  o.send_buffer = parse_flag("--sndbuf", f.send_buffer, parse_socket_buffer_bytes);
  o.receive_buffer = parse_flag("--rcvbuf", f.receive_buffer, parse_socket_buffer_bytes);
  o.spin_ns = parse_flag("--spin", f.spin, parse_duration_ns);
  o.pool_ahead_ns = parse_flag("--pool-ahead", f.pool_ahead, parse_duration_ns);
  if (f.wake_latency.empty() || f.wake_latency == "auto") {
    o.timing.cpu_wake_latency_ns = kWakeLatencyAuto;
  } else if (f.wake_latency == "none") {
    o.timing.cpu_wake_latency_ns = kWakeLatencyNone;
  } else {
    o.timing.cpu_wake_latency_ns = parse_flag("--cpu-wake-latency", f.wake_latency, parse_duration_ns);
  }
  o.flow_timeout_ns = parse_flag("--flow-timeout", f.flow_timeout, parse_duration_ns);
  o.retry_ns = parse_flag("--retry-for", f.retry, parse_duration_ns);
  o.grace_ns = parse_flag("--grace", f.grace, parse_duration_ns);
  o.duration_ns = parse_flag("--duration", f.duration, parse_duration_ns);
  if (!f.start_at.empty()) o.start_at_realtime_ns = parse_flag("--start-at", f.start_at, parse_wall_clock_ns);
  o.token = token_from_phrase(f.token);
  if (!f.link.empty()) o.link_bps = parse_flag("--link", f.link, parse_rate_bps);
  o.bulk_streams = f.bulk_streams;
  o.bulk_dst = f.bulk_dst;
  o.bulk_rate_bps = static_cast<std::uint64_t>(parse_flag("--rate", f.bulk_rate, parse_rate_bps));
  o.nodelay = !f.no_nodelay;
  o.batch_sends = !f.no_io_uring;
  o.progress = !f.no_progress && !f.json;
  return o;
}

}  // namespace xtk
