#include "collective/sizes.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/units.hpp"

namespace xtk::collective {

std::vector<std::uint64_t> sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor,
                                       std::uint64_t step_bytes, std::size_t element_bytes) {
  if (min_bytes > max_bytes) {
    throw UsageError(fmt::format("-b {} is above -e {}: the sweep would be empty", min_bytes, max_bytes));
  }
  if (factor <= 1 && step_bytes == 0 && min_bytes != max_bytes) {
    throw UsageError("-f 1 needs -i BYTES (a step), or -b equal to -e");
  }
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t size = min_bytes; size <= max_bytes;) {
    const std::uint64_t whole = size / element_bytes * element_bytes;
    if (whole > 0 && (sizes.empty() || sizes.back() != whole)) sizes.push_back(whole);
    const std::uint64_t next = factor > 1 ? size * factor : size + step_bytes;
    if (next <= size) break;  // one size only (-b = -e), or overflow
    size = next;
  }
  return sizes;
}

double all_reduce_bus_factor(std::uint64_t nranks) {
  return nranks == 0 ? 0.0 : 2.0 * static_cast<double>(nranks - 1) / static_cast<double>(nranks);
}

double algbw_gbyte_s(std::uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / 1e9 / seconds : 0.0;
}

}  // namespace xtk::collective
