// xtk-client's engine: replays a schedule (or bulk streams) against xtk
// servers. A feeder thread reads the schedule ahead of time and hands flows to
// T workers; each worker owns an epoll set and its connections and starts
// every flow at its absolute deadline (sleep to a guard, then spin). Every
// scheduled flow ends as exactly one record.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flow/summary.hpp"
#include "flow/timing.hpp"
#include "transport/transport.hpp"

namespace xtk {

enum class ConnectionPolicy { pool, per_flow };

struct ClientOptions {
  std::string schedule;               // path or "-"; empty in bulk mode
  std::string records = "flows.csv";  // flow records (.csv or .jsonl)
  std::string transport = "tcp";      // lib/transport's registry
  DeviceSettings device;              // --transport rdma: device, port, messages
  std::vector<std::string> map;       // "h1=10.77.0.2[:port]"
  std::uint16_t port = 7000;          // for destinations given without a port
  unsigned threads = 1;
  ConnectionPolicy policy = ConnectionPolicy::pool;
  std::size_t pool_limit = 64;  // connections per destination per worker
  std::size_t pool_init = 2;    // opened per destination per worker before the start
  // Pool: a connection is opened ahead for every flow due within this time, so
  // a burst finds them ready instead of waiting for handshakes. Most of the
  // feeder's 50 ms: at a congested port a handshake queues behind the flows'
  // own data, for milliseconds (bench/flow part 2).
  std::int64_t pool_ahead_ns = 40'000'000;
  Direction direction = Direction::push;
  std::int64_t spin_ns = 100'000;  // wake this long before a start and spin to it
  TimingRequest timing;            // SCHED_FIFO, worker CPUs, PM QoS: the best permitted by default
  std::string congestion_control;  // empty: the kernel's default
  int send_buffer = 0, receive_buffer = 0;
  bool nodelay = true;
  bool batch_sends = true;  // a wake-up's sends in one io_uring call (transport.hpp, Poller::send_later)
  std::int64_t flow_timeout_ns = 60'000'000'000;
  std::int64_t retry_ns = 5'000'000'000;  // keep retrying a failing connect this long per flow
  std::int64_t grace_ns = 2'000'000'000;  // after an interrupt, for flows in flight
  std::int64_t duration_ns = 0;           // 0: the whole schedule
  std::optional<std::int64_t> start_at_realtime_ns;
  std::int64_t prepare_ns = 300'000'000;  // from now to the start, without --start-at
  std::uint64_t token = 0;
  double link_bps = 0;  // 0: the schedule's link_bps
  // Bulk mode (no schedule): long-lived streams, iperf-style.
  unsigned bulk_streams = 0;
  std::string bulk_dst;
  std::uint64_t bulk_rate_bps = 0;
  bool progress = false;  // a live line on stderr each second

  nlohmann::json to_json() const;
};

struct ClientResult {
  ClientSummary summary;
  std::uint64_t records = 0;
  bool interrupted = false;
  std::int64_t start_realtime_ns = 0;  // CLOCK_REALTIME at the schedule's time zero
  std::vector<std::string> warnings;   // e.g. an option the kernel refused
  nlohmann::json timing;               // what the workers got (Timing::to_json)
};

// The descriptors xtk-client sizes its table for before its threads start
// (prepare_open_files): 65,536 connections, 512 KiB of kernel memory.
inline constexpr std::uint64_t kClientDescriptorTable = 65'536;

// Runs to the end of the schedule, or until `interrupt` becomes true.
ClientResult run_client(const ClientOptions& options, const std::atomic<bool>& interrupt);

}  // namespace xtk
