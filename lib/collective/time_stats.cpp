#include "collective/time_stats.hpp"

#include <algorithm>
#include <string>

#include "core/stats.hpp"

namespace xtk::collective {

TimeStats TimeStats::of(std::vector<double> values) {
  TimeStats s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  RunningStats running;
  for (double v : values) running.add(v);
  s.n = values.size();
  s.min = values.front();
  s.max = values.back();
  s.p50 = percentile_sorted(values, 0.50);
  s.p99 = percentile_sorted(values, 0.99);
  s.mean = running.mean();
  s.cv = running.cv();
  return s;
}

nlohmann::json TimeStats::to_json(const char* unit) const {
  const std::string u(unit);
  return {{"n", n},         {"min" + u, min},   {"p50" + u, p50}, {"p99" + u, p99},
          {"max" + u, max}, {"mean" + u, mean}, {"cv", cv}};
}

}  // namespace xtk::collective
