// The spread of a series of times (per-iteration collective times, iteration
// times): what --json reports beside nccl-tests' average.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

namespace xtk::collective {

struct TimeStats {
  std::uint64_t n = 0;
  double min = 0, p50 = 0, p99 = 0, max = 0, mean = 0;
  double cv = 0;  // stdev / mean
  static TimeStats of(std::vector<double> values);
  // Keys with `unit` appended: {"min_us": ...}, plus "n" and "cv".
  nlohmann::json to_json(const char* unit) const;
};

}  // namespace xtk::collective
