// xtk-server's engine: N worker threads, each with its own event loop and its
// own instance of the transport (lib/transport), which accepts channels on
// every address (TCP: one SO_REUSEPORT listener per worker), reads flow
// headers and sinks (push) or sources (pull) the flows' bytes. Bounded in
// connections, header time, idle time and flow size; a bad peer costs only
// its connection.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "transport/transport.hpp"

namespace xtk {

struct ServerOptions {
  std::string transport = "tcp";  // lib/transport's registry
  DeviceSettings device;          // --transport rdma: device, port, messages
  std::vector<std::string> listen{"[::]:7000"};
  unsigned threads = 1;
  std::size_t max_connections = 10000;
  std::int64_t header_timeout_ns = 5'000'000'000;  // for a header that has begun to arrive
  std::int64_t idle_timeout_ns = 300'000'000'000;  // for a connection with no traffic, between or within flows
  std::uint64_t max_flow_bytes = 1ULL << 40;
  std::uint64_t token = 0;  // 0 = no token required
  int send_buffer = 0, receive_buffer = 0;
  bool batch_sends = true;  // a wake-up's acks in one io_uring call (transport.hpp, Poller::send_later)
};

struct ServerCounters {
  std::uint64_t bytes_received = 0, bytes_sent = 0;
  std::uint64_t push_flows = 0, pull_flows = 0, streams = 0;
  std::uint64_t accepted = 0, open = 0;
  std::uint64_t rejected_full = 0;      // closed at once: --max-connections were open
  std::uint64_t rejected_fd_limit = 0;  // closed at once: the process ran out of descriptors
  std::uint64_t bad_headers = 0, unauthenticated = 0, too_large = 0;
  std::uint64_t header_timeouts = 0, idle_timeouts = 0, aborted_flows = 0;
  std::uint64_t option_failures = 0;  // flows served without their DSCP or pacing
  nlohmann::json to_json() const;
};

// Descriptors a server with these options may hold at once: a connection
// each, plus listeners, epoll sets and spares, and a few for the process.
std::uint64_t descriptors_needed(const ServerOptions& o);

class Server {
 public:
  explicit Server(ServerOptions options);  // binds now: errors surface before run()
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Bound addresses (a port of 0 in --listen is replaced by the kernel's choice).
  const std::vector<SocketAddress>& addresses() const { return addresses_; }
  void start();  // worker threads begin serving
  void stop();   // threads end; safe to call from another thread
  ServerCounters counters() const;

 private:
  struct Worker;
  ServerOptions options_;
  ServerSettings settings_;
  std::vector<SocketAddress> addresses_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> open_{0};
};

}  // namespace xtk
