// libFuzzer target: parse_profile (model profiles, configs/models/*.csv) on
// arbitrary bytes, then scale_profile as `train --size-scale` and xtk-run's
// emulation use it.
//
// Bad input must end in xtk::Error (InputError, or UsageError for a scale
// past 2^63 elements); anything else that escapes, a sanitizer report, or an
// accepted profile that breaks the invariants below is a bug. Seeds: the
// shipped profiles. Run through scripts/fuzz.sh.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "collective/profile.hpp"
#include "core/error.hpp"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void check_invariants(const xtk::collective::ModelProfile& p) {
  check(!p.tensors.empty());
  for (const auto& t : p.tensors) {
    check(!t.name.empty() && t.numel >= 1);
    check(std::isfinite(t.compute_weight) && t.compute_weight >= 0);
  }
  if (p.compute_ms) check(std::isfinite(*p.compute_ms) && *p.compute_ms > 0);
  check(std::isfinite(p.forward_fraction) && p.forward_fraction >= 0 && p.forward_fraction < 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const auto profile = xtk::collective::parse_profile(in, "fuzz.csv");
    check_invariants(profile);
    for (double factor : {0.04, 0.63, 25.0}) check_invariants(xtk::collective::scale_profile(profile, factor));
  } catch (const xtk::Error&) {
    // Rejected input: the expected outcome for most bytes.
  }
  return 0;
}
