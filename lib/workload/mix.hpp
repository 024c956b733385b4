// Weighted mixes given on the command line: "26" (a constant) or
// "0:0.7,26:0.3" (values with weights; weights need not sum to 1).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/random.hpp"

namespace xtk {

template <typename T>
class WeightedMix {
 public:
  void add(T value, double weight);
  const T& pick(Rng& rng) const;
  const std::vector<T>& values() const { return values_; }
  const std::vector<double>& weights() const { return weights_; }
  bool empty() const { return values_.empty(); }
  bool constant() const { return values_.size() == 1; }

 private:
  std::vector<T> values_;
  std::vector<double> weights_;
  std::vector<double> cumulative_;
};

// Hosts: "h1", "h1:3,h2:1", "10.0.0.2:2", "[fd00::1]:2" (brackets when an
// IPv6 address carries a weight). `flag` names the option in errors.
WeightedMix<std::string> parse_host_mix(std::string_view text, std::string_view flag);
// DSCP code points 0-63 with weights.
WeightedMix<int> parse_dscp_mix(std::string_view text, std::string_view flag);
// Per-flow pacing caps (rates with units, 0 = uncapped) with weights.
WeightedMix<std::uint64_t> parse_rate_mix(std::string_view text, std::string_view flag);

// TCP congestion controls (cubic, bbr, ...) with weights.
WeightedMix<std::string> parse_congestion_control_mix(std::string_view text, std::string_view flag);

// "a:1,b:2" back from a mix, for schedule headers.
template <typename T>
std::string describe(const WeightedMix<T>& mix);

}  // namespace xtk
