// Destination patterns: who each source sends its flows to.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/random.hpp"
#include "workload/mix.hpp"

namespace xtk {

enum class Pattern {
  fan_out,      // every flow picks a destination from the weighted --dst list
  one_to_one,   // source i sends to destination i
  fan_in,       // every source sends to the one destination (incast)
  all_to_all,   // every flow picks a destination other than its own source
  permutation,  // each source sends to one destination, a seeded random matching
};

Pattern parse_pattern(std::string_view text);  // throws UsageError listing the names
std::string_view pattern_name(Pattern pattern);

// For one source: picks the destination of each flow.
class DestinationChooser {
 public:
  const std::string& pick(Rng& rng) const;

 private:
  friend std::vector<DestinationChooser> plan_destinations(Pattern, const std::vector<std::string>&,
                                                           const WeightedMix<std::string>&, std::uint64_t);
  WeightedMix<std::string> mix_;
};

// One chooser per source, in the order of `sources`. Throws UsageError when
// the lists do not fit the pattern (e.g. one-to-one with unequal lengths).
std::vector<DestinationChooser> plan_destinations(Pattern pattern, const std::vector<std::string>& sources,
                                                  const WeightedMix<std::string>& destinations, std::uint64_t seed);

}  // namespace xtk
