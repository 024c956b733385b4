// `xtk-gen inspect`: what a schedule really offers, read back from the file
// in one streaming pass (constant memory in the number of flows).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "workload/schedule.hpp"

namespace xtk {

inline constexpr int kInspectFormatVersion = 1;  // of the --json object

struct InspectOptions {
  std::vector<std::int64_t> windows_ns{1'000'000, 10'000'000};
  // Burst grid; taken from the schedule header when not given.
  std::optional<std::int64_t> burst_width_ns, burst_period_ns;
};

struct WindowLoad {
  std::int64_t window_ns = 0;
  std::uint64_t windows = 0;
  double mean_bps = 0, p50_bps = 0, p99_bps = 0, max_bps = 0, cv = 0;
  double empty_share = 0;  // windows in which no flow started
};

struct BurstLoad {
  std::int64_t width_ns = 0, period_ns = 0;
  std::uint64_t burst_windows = 0;
  double burst_bps = 0, rest_bps = 0;
  double burst_vs_mean = 0, rest_vs_mean = 0;  // relative to the offered load
  std::uint64_t min_flows_per_burst = 0;
};

struct HostLoad {
  std::uint64_t flows = 0, bytes = 0;
};

struct InspectReport {
  std::string source;
  ScheduleHeader header;
  std::uint64_t flows = 0, bytes = 0;
  std::int64_t first_start_ns = 0, last_start_ns = 0;
  std::int64_t duration_ns = 0;  // from the header, else the last start
  double target_bps = 0;         // load_bps_per_src x sources, when the header says
  double offered_bps = 0;        // bytes started x 8 / duration
  double mean_size_bytes = 0;
  double size_p50 = 0, size_p90 = 0, size_p99 = 0, size_p999 = 0, size_min = 0, size_max = 0;
  std::vector<WindowLoad> windows;
  std::optional<BurstLoad> burst;
  std::map<std::string, HostLoad, std::less<>> by_src, by_dst;
  std::map<int, std::uint64_t> flows_by_dscp;            // only when the schedule has dscp
  std::map<std::uint64_t, std::uint64_t> flows_by_rate;  // only when it has rate_bps
};

InspectReport inspect_schedule(ScheduleReader& reader, const InspectOptions& options);
void print_report(const InspectReport& report, std::ostream& out);
nlohmann::json to_json(const InspectReport& report);

}  // namespace xtk
