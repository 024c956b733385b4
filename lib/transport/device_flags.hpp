// The flags of transports with a device (RDMA), the same on xtk-client and
// xtk-server, with perftest's names where they fit (-d, --ib-port, -x,
// --tclass, --sl). Registered, rendered and converted here once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transport/transport.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace xtk {

class Arguments;

struct DeviceFlags {
  std::string device;
  int port = 1, gid_index = -1, traffic_class = 0, service_level = 0;
  std::string message_size = "64K";
  std::uint32_t outstanding = 16;
  std::string verb = "write";

  bool operator==(const DeviceFlags&) const = default;
};

void add_flags(CLI::App& app, DeviceFlags& flags);
void add_arguments(Arguments& arguments, const DeviceFlags& flags);
// Throws UsageError naming the flag.
DeviceSettings to_settings(const DeviceFlags& flags);

}  // namespace xtk
