// The machine's PM QoS target, for tests of who holds it: what
// /dev/cpu_dma_latency reads, in us (nullopt when it cannot be read: not root).
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>

namespace xtk::testing {

inline std::optional<std::int32_t> cpu_wake_latency_target() {
  std::ifstream in("/dev/cpu_dma_latency", std::ios::binary);
  std::int32_t value = 0;
  if (!in.read(reinterpret_cast<char*>(&value), sizeof value)) return std::nullopt;
  return value;
}

}  // namespace xtk::testing
