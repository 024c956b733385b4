#include "transport/device_flags.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include "core/cli.hpp"
#include "core/units.hpp"

namespace xtk {

void add_flags(CLI::App& app, DeviceFlags& f) {
  const std::string group = "RDMA (--transport rdma; docs/rdma.md)";
  app.add_option("-d,--device", f.device, "RDMA device, as ibv_devices lists it (default: the first)")->group(group);
  app.add_option("--ib-port", f.port, "the device's port")->capture_default_str()->group(group);
  app.add_option("-x,--gid-index", f.gid_index, "GID index: needed for RoCE (show_gids); -1 = address by LID")
      ->capture_default_str()
      ->group(group);
  app.add_option("--tclass", f.traffic_class, "traffic class of the queue pairs' packets (RoCE: DSCP << 2)")
      ->capture_default_str()
      ->group(group);
  app.add_option("--sl", f.service_level, "service level")->capture_default_str()->group(group);
  app.add_option("--msg-size", f.message_size, "a flow goes as messages of this size")
      ->capture_default_str()
      ->group(group);
  app.add_option("--outstanding", f.outstanding, "messages in flight per flow")->capture_default_str()->group(group);
  app.add_option("--verb", f.verb, "write (RDMA WRITE with immediate) or send (SEND with immediate)")
      ->capture_default_str()
      ->group(group);
}

void add_arguments(Arguments& a, const DeviceFlags& f) {
  const DeviceFlags d;
  a.option("--device", f.device, d.device)
      .option("--ib-port", f.port, d.port)
      .option("--gid-index", f.gid_index, d.gid_index)
      .option("--tclass", f.traffic_class, d.traffic_class)
      .option("--sl", f.service_level, d.service_level)
      .option("--msg-size", f.message_size, d.message_size)
      .option("--outstanding", f.outstanding, d.outstanding)
      .option("--verb", f.verb, d.verb);
}

nlohmann::json to_json(const DeviceSettings& s) {
  return {{"device", s.device},
          {"port", s.port},
          {"gid_index", s.gid_index},
          {"traffic_class", s.traffic_class},
          {"service_level", s.service_level},
          {"message_bytes", s.message_bytes},
          {"outstanding", s.outstanding},
          {"verb", s.verb}};
}

DeviceSettings to_settings(const DeviceFlags& f) {
  DeviceSettings s;
  s.device = f.device;
  if (f.port < 1 || f.port > 255) throw UsageError(fmt::format("--ib-port {}: ports count from 1", f.port));
  s.port = f.port;
  if (f.gid_index < -1 || f.gid_index > 255) throw UsageError(fmt::format("--gid-index {}: -1 or 0-255", f.gid_index));
  s.gid_index = f.gid_index;
  if (f.traffic_class < 0 || f.traffic_class > 255) {
    throw UsageError(fmt::format("--tclass {}: 0-255", f.traffic_class));
  }
  s.traffic_class = f.traffic_class;
  if (f.service_level < 0 || f.service_level > 15) throw UsageError(fmt::format("--sl {}: 0-15", f.service_level));
  s.service_level = f.service_level;
  const std::uint64_t message = parse_flag("--msg-size", f.message_size, parse_bytes);
  if (message < 1 || message > (1ULL << 30)) throw UsageError("--msg-size: from 1 byte to 1 GiB");
  s.message_bytes = static_cast<std::uint32_t>(message);
  if (f.outstanding < 1 || f.outstanding > 4096) throw UsageError("--outstanding: from 1 to 4096");
  s.outstanding = f.outstanding;
  if (f.verb != "write" && f.verb != "send") {
    throw UsageError(fmt::format("--verb: '{}' is neither write (RDMA WRITE with immediate) nor send", f.verb));
  }
  s.verb = f.verb;
  return s;
}

}  // namespace xtk
