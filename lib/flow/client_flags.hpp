// xtk-client's command line, defined once: the flags as a user types them,
// their registration with CLI11 (the tool parses with it), their conversion
// into ClientOptions, and the argv a launcher (xtk-run) renders from them.
// tests/unit/command_lines_test.cpp round-trips flags -> argv -> flags.
#pragma once

#include <string>
#include <vector>

#include "flow/client.hpp"
#include "transport/device_flags.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace xtk {

struct ClientFlags {
  std::string schedule;
  std::string records = "flows.csv", transport = "tcp";
  std::vector<std::string> map, cpus;
  unsigned port = 7000;  // checked as a port in to_options (CLI11 would only say it cannot convert)
  unsigned threads = 0;  // 0: 1 for a schedule, one per --bulk stream up to the CPUs (to_options)
  std::string policy = "pool", direction = "push";
  std::size_t pool_limit = 64, pool_init = 2;
  std::string pool_ahead = "40ms", spin = "100us", wake_latency, congestion_control;
  bool realtime = true, no_nodelay = false, no_io_uring = false;
  std::string send_buffer = "0", receive_buffer = "0";
  std::string flow_timeout = "60s", retry = "5s", grace = "2s", duration = "0", start_at, token, link;
  unsigned bulk_streams = 0;
  std::string bulk_dst, bulk_rate = "0";
  bool json = false, no_progress = false;
  DeviceFlags device;

  bool operator==(const ClientFlags&) const = default;
};

void add_flags(CLI::App& app, ClientFlags& flags);
std::vector<std::string> to_arguments(const ClientFlags& flags);
// Throws UsageError naming the flag.
ClientOptions to_options(const ClientFlags& flags);

}  // namespace xtk
