#include "flow/server_flags.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/cli.hpp"
#include "core/units.hpp"
#include "transport/transport.hpp"

namespace xtk {

void add_flags(CLI::App& app, ServerFlags& f) {
  app.add_option("--transport", f.transport,
                 fmt::format("how flows move: {} (docs/flow-engine.md)", fmt::join(transport_names(), ", ")))
      ->capture_default_str();
  app.add_option("-l,--listen", f.listen, "address:port to listen on, repeatable ([::]:7000 takes IPv4 too)")
      ->default_str("[::]:7000");
  app.add_option("-T,--threads", f.threads, "worker threads, each with its own epoll set and listener")
      ->capture_default_str();
  app.add_option("--max-connections", f.max_connections,
                 "connections beyond this (or beyond the open-file limit) are closed at once")
      ->capture_default_str();
  app.add_option("--header-timeout", f.header_timeout, "a flow header that began must complete within this")
      ->capture_default_str();
  app.add_option("--idle-timeout", f.idle_timeout, "close a connection with no traffic for this long")
      ->capture_default_str();
  app.add_option("--max-flow-size", f.max_flow_size, "refuse flows larger than this")->capture_default_str();
  app.add_option("--token", f.token, "pass phrase that clients must present (--token on xtk-client)");
  app.add_option("--sndbuf", f.send_buffer, "SO_SNDBUF size, e.g. 4MiB (0 = the kernel's autotuning)")
      ->capture_default_str();
  app.add_option("--rcvbuf", f.receive_buffer, "SO_RCVBUF size, e.g. 4MiB (0 = the kernel's autotuning)")
      ->capture_default_str();
  app.add_option("-i,--interval", f.interval, "statistics interval (0 = only the final line)")->capture_default_str();
  app.add_option("-t,--duration", f.duration, "stop after this long (0 = until SIGINT/SIGTERM)")->capture_default_str();
  app.add_flag("--no-io-uring", f.no_io_uring,
               "send each ack at once; by default the acks of the flows that end in one wake-up leave together in "
               "one io_uring call, where the kernel allows it (docs/flow-engine.md#send-batching)");
  app.add_flag("--json", f.json, "JSON Lines instead of the table");
  app.add_flag("-q,--quiet", f.quiet, "no per-interval lines");
  add_flags(app, f.device);
}

std::vector<std::string> to_arguments(const ServerFlags& f) {
  const ServerFlags d;
  Arguments a;
  if (f.listen != d.listen) a.each("--listen", f.listen);
  add_arguments(a, f.device);
  return a.option("--transport", f.transport, d.transport)
      .option("--threads", f.threads, d.threads)
      .option("--max-connections", f.max_connections, d.max_connections)
      .option("--header-timeout", f.header_timeout, d.header_timeout)
      .option("--idle-timeout", f.idle_timeout, d.idle_timeout)
      .option("--max-flow-size", f.max_flow_size, d.max_flow_size)
      .option("--token", f.token, d.token)
      .option("--sndbuf", f.send_buffer, d.send_buffer)
      .option("--rcvbuf", f.receive_buffer, d.receive_buffer)
      .option("--interval", f.interval, d.interval)
      .option("--duration", f.duration, d.duration)
      .flag("--no-io-uring", f.no_io_uring)
      .flag("--json", f.json)
      .flag("--quiet", f.quiet)
      .list();
}

ServerOptions to_options(const ServerFlags& f) {
  ServerOptions o;
  o.transport = f.transport;
  o.device = to_settings(f.device);
  o.listen = f.listen;
  o.threads = f.threads;
  o.max_connections = f.max_connections;
  o.header_timeout_ns = parse_flag("--header-timeout", f.header_timeout, parse_duration_ns);
  o.idle_timeout_ns = parse_flag("--idle-timeout", f.idle_timeout, parse_duration_ns);
  o.max_flow_bytes = parse_flag("--max-flow-size", f.max_flow_size, parse_bytes);
  o.token = token_from_phrase(f.token);
  o.send_buffer = parse_flag("--sndbuf", f.send_buffer, parse_socket_buffer_bytes);
  o.receive_buffer = parse_flag("--rcvbuf", f.receive_buffer, parse_socket_buffer_bytes);
  o.batch_sends = !f.no_io_uring;
  return o;
}

}  // namespace xtk
