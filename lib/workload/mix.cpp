#include "workload/mix.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/units.hpp"

namespace xtk {

template <typename T>
void WeightedMix<T>::add(T value, double weight) {
  values_.push_back(std::move(value));
  weights_.push_back(weight);
  cumulative_.push_back((cumulative_.empty() ? 0.0 : cumulative_.back()) + weight);
}

template <typename T>
const T& WeightedMix<T>::pick(Rng& rng) const {
  if (values_.size() == 1) return values_[0];
  const double u = rng.uniform() * cumulative_.back();
  const auto it = std::upper_bound(cumulative_.begin(), cumulative_.end(), u);
  return values_[std::min<std::size_t>(static_cast<std::size_t>(it - cumulative_.begin()), values_.size() - 1)];
}

template <typename T>
std::string describe(const WeightedMix<T>& mix) {
  std::string out;
  for (std::size_t i = 0; i < mix.values().size(); ++i) {
    std::string value = fmt::format("{}", mix.values()[i]);
    if (value.find(':') != std::string::npos) value = fmt::format("[{}]", value);  // IPv6: as --dst takes it
    out += fmt::format("{}{}:{}", i ? "," : "", value, mix.weights()[i]);
  }
  return out;
}

template class WeightedMix<std::string>;
template class WeightedMix<int>;
template class WeightedMix<std::uint64_t>;
template std::string describe(const WeightedMix<std::string>&);
template std::string describe(const WeightedMix<int>&);
template std::string describe(const WeightedMix<std::uint64_t>&);

namespace {

struct Item {
  std::string_view value;
  double weight = 1.0;
};

double parse_weight(std::string_view text, std::string_view item, std::string_view flag) {
  double weight = 0;
  try {
    weight = parse_number(text);
  } catch (const UsageError&) {
    throw UsageError(fmt::format("{}: weight '{}' in '{}' is not a number", flag, text, item));
  }
  if (!(weight > 0)) throw UsageError(fmt::format("{}: weight in '{}' must be above 0", flag, item));
  return weight;
}

// Splits "a:1,b:2" into items; `ipv6_aware` lets bare IPv6 addresses through.
std::vector<Item> split_items(std::string_view text, std::string_view flag, bool ipv6_aware) {
  std::vector<Item> items;
  if (text.empty()) throw UsageError(fmt::format("{}: empty list", flag));
  while (true) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    if (item.empty()) throw UsageError(fmt::format("{}: empty entry in the list", flag));
    Item parsed{item, 1.0};
    if (ipv6_aware && item.front() == '[') {
      const auto close = item.find(']');
      if (close == std::string_view::npos) throw UsageError(fmt::format("{}: '{}' has no closing ']'", flag, item));
      parsed.value = item.substr(1, close - 1);
      std::string_view rest = item.substr(close + 1);
      if (!rest.empty()) {
        if (rest.front() != ':') throw UsageError(fmt::format("{}: expected ':weight' after ']' in '{}'", flag, item));
        parsed.weight = parse_weight(rest.substr(1), item, flag);
      }
    } else {
      const auto colons = std::count(item.begin(), item.end(), ':');
      // Two or more colons without brackets: a bare IPv6 address, weight 1.
      if (colons == 1 || (!ipv6_aware && colons > 0)) {
        const auto colon = item.rfind(':');
        parsed.value = item.substr(0, colon);
        parsed.weight = parse_weight(item.substr(colon + 1), item, flag);
      }
    }
    if (parsed.value.empty()) throw UsageError(fmt::format("{}: empty value in '{}'", flag, item));
    items.push_back(parsed);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return items;
}

}  // namespace

WeightedMix<std::string> parse_host_mix(std::string_view text, std::string_view flag) {
  WeightedMix<std::string> mix;
  for (const auto& item : split_items(text, flag, true)) {
    for (char c : item.value) {
      if (c == ' ' || c == '\t' || c == '#' || c == '=' || static_cast<unsigned char>(c) < 0x20) {
        throw UsageError(fmt::format("{}: host '{}' has a space, '#' or '='", flag, item.value));
      }
    }
    if (std::find(mix.values().begin(), mix.values().end(), item.value) != mix.values().end()) {
      throw UsageError(fmt::format("{}: host '{}' is listed twice", flag, item.value));
    }
    mix.add(std::string(item.value), item.weight);
  }
  return mix;
}

WeightedMix<int> parse_dscp_mix(std::string_view text, std::string_view flag) {
  WeightedMix<int> mix;
  for (const auto& item : split_items(text, flag, false)) {
    double value = 0;
    try {
      value = parse_number(item.value);
    } catch (const UsageError&) {
      throw UsageError(fmt::format("{}: DSCP '{}' is not a number", flag, item.value));
    }
    if (value < 0 || value > 63 || value != std::floor(value)) {
      throw UsageError(fmt::format("{}: DSCP {} is not an integer in 0-63", flag, item.value));
    }
    mix.add(static_cast<int>(value), item.weight);
  }
  return mix;
}

WeightedMix<std::string> parse_congestion_control_mix(std::string_view text, std::string_view flag) {
  WeightedMix<std::string> mix;
  for (const auto& item : split_items(text, flag, false)) {
    if (!valid_congestion_control(item.value)) {
      throw UsageError(
          fmt::format("{}: '{}' is not a congestion control name ({})", flag, item.value, kCongestionControlNameRule));
    }
    mix.add(std::string(item.value), item.weight);
  }
  return mix;
}

WeightedMix<std::uint64_t> parse_rate_mix(std::string_view text, std::string_view flag) {
  WeightedMix<std::uint64_t> mix;
  for (const auto& item : split_items(text, flag, false)) {
    double bps = 0;
    try {
      bps = parse_rate_bps(item.value);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{}: {}", flag, e.what()));
    }
    mix.add(static_cast<std::uint64_t>(std::llround(bps)), item.weight);
  }
  return mix;
}

}  // namespace xtk
