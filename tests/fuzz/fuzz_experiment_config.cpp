// libFuzzer target: parse_experiment_config on arbitrary bytes (TOML or not).
//
// Bad input must end in xtk::Error naming the file and line; anything else
// that escapes, a sanitizer report, or an accepted config that breaks what the
// reader promises (below) is a bug. Seeds: configs/experiments/*.toml and
// tests/fuzz/corpus/experiment_config. Run through scripts/fuzz.sh.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "experiment/config.hpp"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void check_invariants(const xtk::ExperimentConfig& c) {
  check(std::isfinite(c.link_bps) && c.link_bps > 0);
  check(c.repetitions >= 1);
  check(c.training.ranks >= 2);
  check(c.training.iterations >= 1);
  check(!c.training.models.empty() || !c.training.command.empty() || !c.training.replay.empty());
  for (double load : c.cross_traffic.loads) check(std::isfinite(load) && load >= 0 && load <= 1.5);
  const double bytes = c.emulation.byte_scale(c.link_bps), time = c.emulation.time_scale(c.link_bps);
  check(std::isfinite(bytes) && bytes > 0 && std::isfinite(time) && time > 0);
  (void)c.testbed_buffer_bytes();
  (void)c.testbed_rto_min_ms();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    check_invariants(xtk::parse_experiment_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz.toml"));
  } catch (const xtk::Error&) {
    // Rejected input: the expected outcome for most bytes.
  }
  return 0;
}
