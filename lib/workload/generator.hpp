// Schedule generation: a profile per source, destinations by pattern, traffic
// classes by weighted mix, merged into one start-ordered stream of flows.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "workload/cdf.hpp"
#include "workload/mix.hpp"
#include "workload/pattern.hpp"
#include "workload/profile.hpp"
#include "workload/schedule.hpp"

namespace xtk {

enum class Profile { consistent, burst, long_lived };
Profile parse_profile(std::string_view text);
std::string_view profile_name(Profile profile);

struct GenConfig {
  Profile profile = Profile::consistent;
  std::shared_ptr<const FlowSizeCdf> cdf;  // not used by long-lived; already scaled by size_scale
  double size_scale = 1.0;                 // recorded: the CDF's sizes were multiplied by it
  double load_bps = 0;                     // offered by each source
  double link_bps = 0;                     // recorded, and the base of a fractional load
  std::int64_t duration_ns = 0;
  std::uint64_t seed = 1;
  std::vector<std::string> sources;
  WeightedMix<std::string> destinations;
  Pattern pattern = Pattern::fan_out;
  BurstShape burst;
  std::uint32_t long_lived_flows = 1;
  std::int64_t stagger_ns = 0;
  std::optional<WeightedMix<int>> dscp;
  std::optional<WeightedMix<std::uint64_t>> rate;
  std::optional<WeightedMix<std::string>> congestion_control;
};

// The key=value parameters written at the top of the schedule.
ScheduleHeader make_header(const GenConfig& config);

class ScheduleGenerator {
 public:
  explicit ScheduleGenerator(const GenConfig& config);
  ~ScheduleGenerator();
  // Next flow across all sources, ordered by start (ties by source order).
  // Flow ids count flows in that order (0, 1, ...): unique across sources, and
  // increasing in every file, a {src} split's included.
  bool next(Flow& flow);

 private:
  struct Source;
  bool advance(std::size_t index);
  const GenConfig& config_;
  std::vector<std::unique_ptr<Source>> sources_;
  std::vector<std::size_t> heap_;  // min-heap of source indices by pending start
  std::uint64_t next_id_ = 0;
};

struct GenResult {
  std::uint64_t flows = 0;
  std::uint64_t bytes = 0;
  std::vector<std::string> files;
};

// Writes the schedule to `path` ("-" = stdout). A path containing "{src}"
// writes one file per source instead, "{src}" replaced by the source's name.
GenResult write_schedule(const GenConfig& config, const std::string& path);

}  // namespace xtk
