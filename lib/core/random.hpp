// Deterministic random streams.
//
// Schedules must be byte-identical for the same seed, so nothing here uses the
// standard distributions (their algorithms differ between standard libraries):
// only the engine's raw output, whose sequence the C++ standard fixes, and
// transforms written out here. The transforms call log() and pow(), so the
// guarantee is for one C library (glibc here), not across all of them.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace xtk {

// SplitMix64 finaliser: spreads (seed, stream) pairs into unrelated engine seeds.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Rng {
 public:
  // `stream` names an independent sequence for the same seed (e.g. sizes vs
  // arrivals), so adding one random choice does not shift the others.
  explicit Rng(std::uint64_t seed, std::uint64_t stream = 0)
      : engine_(mix64(seed ^ mix64(stream + 0x5851f42d4c957f2dULL))) {}

  std::uint64_t next() { return engine_(); }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  // Uniform in (0, 1]: safe for log().
  double uniform_open0() { return (static_cast<double>(engine_() >> 11) + 1.0) * 0x1.0p-53; }

  // Exponential with the given mean (inverse transform).
  double exponential(double mean) { return -std::log(uniform_open0()) * mean; }

  // Uniform integer in [0, n) (Lemire's multiply-shift; bias < n / 2^64).
  std::uint64_t below(std::uint64_t n) {
    __extension__ using Wide = unsigned __int128;
    return static_cast<std::uint64_t>((static_cast<Wide>(engine_()) * n) >> 64);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace xtk
