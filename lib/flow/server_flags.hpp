// xtk-server's command line, defined once: the flags as a user types them,
// their registration with CLI11 (the tool parses with it), their conversion
// into ServerOptions, and the argv a launcher (xtk-run) renders from them.
// tests/unit/command_lines_test.cpp round-trips flags -> argv -> flags.
#pragma once

#include <string>
#include <vector>

#include "flow/server.hpp"
#include "transport/device_flags.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace xtk {

struct ServerFlags {
  std::string transport = "tcp";
  std::vector<std::string> listen{"[::]:7000"};
  unsigned threads = 1;
  std::size_t max_connections = 10000;
  std::string header_timeout = "5s", idle_timeout = "300s", max_flow_size = "1TiB", token;
  std::string send_buffer = "0", receive_buffer = "0";
  std::string interval = "1s", duration = "0";
  bool json = false, quiet = false, no_io_uring = false;
  DeviceFlags device;

  bool operator==(const ServerFlags&) const = default;
};

void add_flags(CLI::App& app, ServerFlags& flags);
std::vector<std::string> to_arguments(const ServerFlags& flags);
// Throws UsageError naming the flag.
ServerOptions to_options(const ServerFlags& flags);

}  // namespace xtk
