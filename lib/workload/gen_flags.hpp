// xtk-gen's command line, defined once: the flags as a user types them,
// their registration with CLI11 (the tool parses with it), their conversion
// into a GenConfig, and the argv a launcher (xtk-run) renders from them.
// tests/unit/command_lines_test.cpp round-trips flags -> argv -> flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workload/generator.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace xtk {

struct GenFlags {
  std::string profile = "consistent", cdf = "web-search", load = "50%", link = "25G", duration = "10s";
  std::uint64_t seed = 1;
  std::string src = "h0", dst, pattern = "fan-out";
  std::string burst_width = "1ms", burst_period, dscp, flow_rate, congestion_control, stagger = "0";
  double burst_height = 3.0, size_scale = 1.0;
  std::uint32_t min_burst_flows = 2, min_rest_flows = 8, flows = 1;
  std::string out = "-";
  bool inspect = false, json = false;

  bool operator==(const GenFlags&) const = default;
};

void add_flags(CLI::App& app, GenFlags& flags);
std::vector<std::string> to_arguments(const GenFlags& flags);
// Reads the CDF; throws UsageError naming the flag.
GenConfig to_config(const GenFlags& flags);

}  // namespace xtk
