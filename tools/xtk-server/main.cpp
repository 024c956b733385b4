// xtk-server: the receiving end of xtk flows. Sinks push flows (then
// acknowledges them) and sources pull flows; prints receive statistics per
// interval and at the end.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "core/cli.hpp"
#include "core/clock.hpp"
#include "core/open_files.hpp"
#include "core/signals.hpp"
#include "core/units.hpp"
#include "flow/server_flags.hpp"

// run_tool turns every exception into an exit status; CLI11's set-up throws only on programming errors.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "Receive xtk flows: sink pushed bytes (and acknowledge each flow), source pulled bytes.\n"
      "Wire format: docs/wire.md.\n\n"
      "  xtk-server --listen 0.0.0.0:7000 --threads 2",
      "xtk-server"};
  app.set_version_flag("--version", std::string("xtk-server ") + XTK_VERSION);
  xtk::ServerFlags flags;
  xtk::add_flags(app, flags);

  return xtk::run_tool(app, argc, argv, [&] {
    const auto o = xtk::to_options(flags);
    const bool json = flags.json, quiet = flags.quiet;
    const std::int64_t interval_ns = xtk::parse_flag("--interval", flags.interval, xtk::parse_duration_ns);
    const std::int64_t duration_ns = xtk::parse_flag("--duration", flags.duration, xtk::parse_duration_ns);
    const auto& stop = xtk::stop_requested();
    const std::uint64_t needed = xtk::descriptors_needed(o);
    const std::uint64_t files = xtk::prepare_open_files(needed);
    if (files < needed) {
      std::cerr << fmt::format(
                       "xtk-server: note: --max-connections {} is above what the open-file limit ({}, ulimit -n) "
                       "allows; connections beyond it are closed at once (connections_rejected_fd_limit)",
                       o.max_connections, files)
                << std::endl;
    }
    xtk::Server server(o);
    server.start();
    std::string where;
    for (const auto& a : server.addresses()) where += (where.empty() ? "" : ", ") + a.to_string();
    if (json) {
      std::cout << nlohmann::json{{"event", "listening"},
                                  {"addresses", where},
                                  {"threads", o.threads},
                                  {"provenance", xtk::tool_provenance()}}
                       .dump()
                << std::endl;
    } else {
      std::cout << fmt::format("# xtk-server listening on {} with {} thread(s)", where, o.threads) << std::endl;
      if (!quiet && interval_ns > 0) {
        std::cout << "#  time_s    rx_gbps    tx_gbps  flows_per_s  open_conns  bad_headers" << std::endl;
      }
    }
    const std::int64_t start = xtk::monotonic_ns();
    std::int64_t next = start + (interval_ns > 0 ? interval_ns : INT64_MAX / 2);
    auto last = server.counters();
    std::int64_t last_t = start;
    while (!stop.load() && (duration_ns == 0 || xtk::monotonic_ns() - start < duration_ns)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const std::int64_t now = xtk::monotonic_ns();
      if (now < next) continue;
      const auto c = server.counters();
      const double dt = static_cast<double>(now - last_t) / 1e9;
      const double rx = static_cast<double>(c.bytes_received - last.bytes_received) * 8 / dt / 1e9;
      const double tx = static_cast<double>(c.bytes_sent - last.bytes_sent) * 8 / dt / 1e9;
      const double flows = static_cast<double>(c.push_flows + c.pull_flows + c.streams - last.push_flows -
                                               last.pull_flows - last.streams) /
                           dt;
      if (!quiet) {
        if (json) {
          std::cout << nlohmann::json{{"event", "interval"},         {"time_s", static_cast<double>(now - start) / 1e9},
                                      {"rx_bps", rx * 1e9},          {"tx_bps", tx * 1e9},
                                      {"flows_per_s", flows},        {"open_connections", c.open},
                                      {"bad_headers", c.bad_headers}}
                           .dump()
                    << std::endl;
        } else {
          std::cout << fmt::format("  {:7.2f} {:10.4f} {:10.4f} {:12.0f} {:11} {:12}",
                                   static_cast<double>(now - start) / 1e9, rx, tx, flows, c.open, c.bad_headers)
                    << std::endl;
        }
      }
      last = c;
      last_t = now;
      next += interval_ns;
    }
    server.stop();
    const auto c = server.counters();
    const double seconds = static_cast<double>(xtk::monotonic_ns() - start) / 1e9;
    if (json) {
      auto j = c.to_json();
      j["event"] = "final";
      j["seconds"] = seconds;
      std::cout << j.dump() << std::endl;
    } else {
      std::cout << fmt::format(
          "# final: {:.2f} s, received {} ({}), sent {}, flows push {} pull {} streams {}, connections {} "
          "(rejected {} at --max-connections, {} at the open-file limit), bad headers {}, unauthenticated {}, "
          "too large {}, timeouts header {} idle {}, aborted {}, option failures {}\n",
          seconds, c.bytes_received, xtk::format_rate(static_cast<double>(c.bytes_received) * 8 / seconds),
          c.bytes_sent, c.push_flows, c.pull_flows, c.streams, c.accepted, c.rejected_full, c.rejected_fd_limit,
          c.bad_headers, c.unauthenticated, c.too_large, c.header_timeouts, c.idle_timeouts, c.aborted_flows,
          c.option_failures);
    }
  });
}
