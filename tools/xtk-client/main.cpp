// xtk-client: replays a flow schedule (xtk-gen format) against xtk servers,
// starting every flow at its scheduled microsecond, and records every flow.
#include <unistd.h>

#include <fmt/format.h>

#include <iostream>
#include <sstream>

#include "core/cli.hpp"
#include "core/open_files.hpp"
#include "core/signals.hpp"
#include "core/units.hpp"
#include "flow/client.hpp"

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

// run_tool turns every exception into an exit status; CLI11's set-up throws only on programming errors.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "Replay a schedule of flows against xtk-server(s), each flow starting at its scheduled time, and write\n"
      "one record per flow. Or, with --bulk, run long-lived streams like iperf.\n\n"
      "  xtk-client web.csv --map h1=10.77.0.2 -o flows.csv\n"
      "  xtk-client --bulk 4 --dst 10.77.0.2 --duration 10s",
      "xtk-client"};
  app.set_version_flag("--version", std::string("xtk-client ") + XTK_VERSION);
  xtk::ClientOptions o;
  std::vector<std::string> map, cpus;
  std::string policy = "pool", direction = "push", spin = "100us", pool_ahead = "10ms", flow_timeout = "60s",
              retry = "5s", grace = "2s";
  std::string duration = "0", start_at, token, link, bulk_rate = "0", wake_latency;
  bool json = false, no_nodelay = false, no_progress = false;
  app.add_option("schedule", o.schedule, "schedule file from xtk-gen ('-' = stdin)");
  app.add_option("-o,--records", o.records, "flow records, CSV or JSON Lines by extension (.jsonl)")
      ->capture_default_str();
  app.add_option("--map", map, "NAME=ADDRESS[:PORT] for schedule destinations, repeatable or comma-separated");
  app.add_option("-p,--port", o.port, "server port for destinations given without one")->capture_default_str();
  app.add_option("-T,--threads", o.threads, "worker threads (flows are spread round-robin)")->capture_default_str();
  app.add_option("--policy", policy, "pool (persistent connections) or per-flow (a new connection per flow)")
      ->capture_default_str();
  app.add_option("--pool-limit", o.pool_limit, "connections per destination per thread at most (both policies)")
      ->capture_default_str();
  app.add_option("--pool-init", o.pool_init,
                 "spare connections per destination per thread: opened before the start for the schedule header's "
                 "destinations, and kept open")
      ->capture_default_str();
  app.add_option("--pool-ahead", pool_ahead,
                 "pool: open a connection ahead for every flow due within this time (0 = only --pool-init spares)")
      ->capture_default_str();
  app.add_option("--direction", direction, "push (client sends the bytes) or pull (servers send them)")
      ->capture_default_str();
  app.add_option("--spin", spin, "wake this long before a flow's start and spin to it")->capture_default_str();
  app.add_flag("--realtime", o.realtime, "SCHED_FIFO for the worker threads (root or CAP_SYS_NICE)");
  app.add_option("--cpus", cpus, "pin worker i to the i-th CPU of this list, e.g. 1,2 or 2-5");
  app.add_option("--cpu-wake-latency", wake_latency,
                 "while running, keep every CPU out of idle states slower than this to leave (PM QoS; 0 = idle "
                 "CPUs poll): wake-ups before starts come on time, the machine draws more power (root)");
  app.add_option("--cc", o.congestion_control, "TCP congestion control, e.g. cubic, dctcp, bbr");
  app.add_option("--sndbuf", o.send_buffer, "SO_SNDBUF bytes (0 = kernel autotuning)");
  app.add_option("--rcvbuf", o.receive_buffer, "SO_RCVBUF bytes (0 = kernel autotuning)");
  app.add_flag("--no-nodelay", no_nodelay, "leave Nagle's algorithm on");
  app.add_option("--flow-timeout", flow_timeout,
                 "a flow not done this long after its start (a bulk stream: after --duration) ends as timeout")
      ->capture_default_str();
  app.add_option("--retry-for", retry,
                 "keep retrying an unreachable server this long, from each flow's scheduled start")
      ->capture_default_str();
  app.add_option("--grace", grace, "after SIGINT/SIGTERM, let flows in flight finish this long")->capture_default_str();
  app.add_option("-t,--duration", duration, "run length (0 = the whole schedule); needed with --bulk")
      ->capture_default_str();
  app.add_option("--start-at", start_at, "wall-clock start (Unix seconds or ISO 8601 UTC), to start hosts together");
  app.add_option("--token", token, "pass phrase the servers require");
  app.add_option("--link", link, "link rate for the ideal FCT in slowdowns (default: the schedule's link_bps)");
  app.add_option("--bulk", o.bulk_streams, "bulk mode: this many long-lived streams to --dst");
  app.add_option("--dst", o.bulk_dst, "bulk mode: server address[:port]");
  app.add_option("--rate", bulk_rate, "bulk mode: pacing cap per stream (0 = none)")->capture_default_str();
  app.add_flag("--json", json, "summary as JSON (with the options and warnings)");
  app.add_flag("--no-progress", no_progress, "no live progress line on a terminal");

  return xtk::run_tool(app, argc, argv, [&] {
    o.map = split_commas(map);
    for (const auto& item : split_commas(cpus)) {
      for (int cpu : xtk::parse_cpu_list(item, "--cpus")) o.cpus.push_back(cpu);
    }
    if (policy == "pool") {
      o.policy = xtk::ConnectionPolicy::pool;
    } else if (policy == "per-flow") {
      o.policy = xtk::ConnectionPolicy::per_flow;
    } else {
      throw xtk::UsageError(fmt::format("--policy: '{}' is neither pool nor per-flow", policy));
    }
    if (direction == "push") {
      o.direction = xtk::Direction::push;
    } else if (direction == "pull") {
      o.direction = xtk::Direction::pull;
    } else {
      throw xtk::UsageError(fmt::format("--direction: '{}' is neither push nor pull", direction));
    }
    o.spin_ns = xtk::parse_flag("--spin", spin, xtk::parse_duration_ns);
    o.pool_ahead_ns = xtk::parse_flag("--pool-ahead", pool_ahead, xtk::parse_duration_ns);
    if (!wake_latency.empty())
      o.cpu_wake_latency_ns = xtk::parse_flag("--cpu-wake-latency", wake_latency, xtk::parse_duration_ns);
    o.flow_timeout_ns = xtk::parse_flag("--flow-timeout", flow_timeout, xtk::parse_duration_ns);
    o.retry_ns = xtk::parse_flag("--retry-for", retry, xtk::parse_duration_ns);
    o.grace_ns = xtk::parse_flag("--grace", grace, xtk::parse_duration_ns);
    o.duration_ns = xtk::parse_flag("--duration", duration, xtk::parse_duration_ns);
    if (!start_at.empty()) {
      try {
        o.start_at_realtime_ns = xtk::parse_wall_clock_ns(start_at);
      } catch (const xtk::UsageError& e) {
        throw xtk::UsageError(fmt::format("--start-at {}", e.what()));
      }
    }
    o.token = xtk::token_from_phrase(token);
    if (!link.empty()) o.link_bps = xtk::parse_rate_bps(link);
    o.bulk_rate_bps = static_cast<std::uint64_t>(xtk::parse_rate_bps(bulk_rate));
    o.nodelay = !no_nodelay;
    o.progress = !no_progress && !json;

    xtk::raise_open_file_limit();  // a descriptor per pooled connection
    const auto result = xtk::run_client(o, xtk::stop_requested());
    if (json) {
      nlohmann::json j{{"options", o.to_json()},
                       {"summary", result.summary.to_json()},
                       {"records", result.records},
                       {"interrupted", result.interrupted},
                       {"start_realtime_ns", result.start_realtime_ns},
                       {"warnings", result.warnings}};
      std::cout << j.dump() << std::endl;
    } else {
      std::cout << "# xtk-client " << o.to_json().dump() << "\n";
      for (const auto& w : result.warnings) std::cout << "# warning: " << w << "\n";
      if (result.interrupted) std::cout << "# interrupted: flows not finished are recorded as cancelled\n";
      std::cout << fmt::format("# {} records written to {}\n", result.records, o.records);
      result.summary.print(std::cout);
    }
    if (result.summary.flows() > 0 && result.summary.flows_with(xtk::FlowStatus::ok) == 0 && !result.interrupted) {
      throw xtk::Error("no flow completed (see the records' error column)");
    }
  });
}
