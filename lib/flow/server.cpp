#include "flow/server.hpp"

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"

namespace xtk {

nlohmann::json ServerCounters::to_json() const {
  return {{"bytes_received", bytes_received},
          {"bytes_sent", bytes_sent},
          {"push_flows", push_flows},
          {"pull_flows", pull_flows},
          {"streams", streams},
          {"connections_accepted", accepted},
          {"connections_rejected_full", rejected_full},
          {"connections_rejected_fd_limit", rejected_fd_limit},
          {"connections_open", open},
          {"bad_headers", bad_headers},
          {"unauthenticated", unauthenticated},
          {"too_large", too_large},
          {"header_timeouts", header_timeouts},
          {"idle_timeouts", idle_timeouts},
          {"aborted_flows", aborted_flows},
          {"option_failures", option_failures}};
}

namespace {

constexpr std::int64_t kSweepNs = 100'000'000;

}  // namespace

struct Server::Worker {
  Server& server;
  Poller poller;
  ServerStats stats;
  std::unique_ptr<ServerTransport> transport;
  std::thread thread;

  explicit Worker(Server& s)
      : server(s),
        poller(s.options_.batch_sends),
        transport(make_server_transport(s.options_.transport, ServerContext{s.settings_, stats, s.open_}, poller)) {}

  void run() {
    std::int64_t next_sweep = monotonic_ns() + kSweepNs;
    const timespec timeout = to_timespec(50'000'000);
    while (!server.stopping_.load(std::memory_order_relaxed)) {
      // One clock read per wait: the server's times only measure quiet
      // connections against timeouts of seconds.
      std::int64_t now = -1;
      poller.dispatch(&timeout, [&now] {
        if (now < 0) now = monotonic_ns();
        return now;
      });
      if (now < 0) now = monotonic_ns();  // the wait timed out
      if (now >= next_sweep) {
        transport->sweep(now);
        next_sweep = now + kSweepNs;
      }
    }
  }
};

std::uint64_t descriptors_needed(const ServerOptions& o) {
  constexpr std::uint64_t kProcess = 16;  // standard streams, the output file, libraries' own
  return o.max_connections + std::uint64_t{o.threads} * (o.listen.size() + 2) + kProcess;
}

Server::Server(ServerOptions options) : options_(std::move(options)) {
  if (options_.threads == 0) throw UsageError("--threads must be at least 1");
  if (options_.listen.empty()) throw UsageError("--listen: at least one address");
  if (options_.max_connections == 0) throw UsageError("--max-connections must be at least 1");
  if (options_.header_timeout_ns <= 0) throw UsageError("--header-timeout must be above 0");
  for (std::size_t i = 0; i < options_.listen.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (options_.listen[j] == options_.listen[i]) {
        throw UsageError(fmt::format("--listen {} is given twice", options_.listen[i]));
      }
    }
  }
  settings_.device = options_.device;
  settings_.max_connections = options_.max_connections;
  settings_.header_timeout_ns = options_.header_timeout_ns;
  settings_.idle_timeout_ns = options_.idle_timeout_ns;
  settings_.max_flow_bytes = options_.max_flow_bytes;
  settings_.token = options_.token;
  settings_.send_buffer = options_.send_buffer;
  settings_.receive_buffer = options_.receive_buffer;
  for (unsigned t = 0; t < options_.threads; ++t) workers_.push_back(std::make_unique<Worker>(*this));
  for (const auto& text : options_.listen) {
    SocketAddress address = resolve_address(text, 7000, "--listen");
    for (auto& worker : workers_) {
      // Port 0: every worker listens on the port the kernel chose for the first.
      address = worker->transport->listen(address, options_.threads > 1);
      if (&worker == &workers_.front()) addresses_.push_back(address);
    }
  }
}

Server::~Server() { stop(); }

void Server::start() {
  for (auto& worker : workers_) {
    Worker* w = worker.get();
    w->thread = std::thread([w] { w->run(); });
  }
}

void Server::stop() {
  stopping_.store(true);
  for (auto& worker : workers_) {
    if (worker->thread.joinable()) worker->thread.join();
  }
}

ServerCounters Server::counters() const {
  ServerCounters total;
  for (const auto& w : workers_) {
    const auto& c = w->stats;
    const auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    total.bytes_received += get(c.bytes_received);
    total.bytes_sent += get(c.bytes_sent);
    total.push_flows += get(c.push_flows);
    total.pull_flows += get(c.pull_flows);
    total.streams += get(c.streams);
    total.accepted += get(c.accepted);
    total.rejected_full += get(c.rejected_full);
    total.rejected_fd_limit += get(c.rejected_fd_limit);
    total.bad_headers += get(c.bad_headers);
    total.unauthenticated += get(c.unauthenticated);
    total.too_large += get(c.too_large);
    total.header_timeouts += get(c.header_timeouts);
    total.idle_timeouts += get(c.idle_timeouts);
    total.aborted_flows += get(c.aborted_flows);
    total.option_failures += get(c.option_failures);
  }
  total.open = open_.load(std::memory_order_relaxed);
  return total;
}

}  // namespace xtk
