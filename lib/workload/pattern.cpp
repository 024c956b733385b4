#include "workload/pattern.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <numeric>

#include "core/error.hpp"

namespace xtk {
namespace {

constexpr std::array<std::pair<Pattern, std::string_view>, 5> kNames{{{Pattern::fan_out, "fan-out"},
                                                                      {Pattern::one_to_one, "one-to-one"},
                                                                      {Pattern::fan_in, "fan-in"},
                                                                      {Pattern::all_to_all, "all-to-all"},
                                                                      {Pattern::permutation, "permutation"}}};

WeightedMix<std::string> single(const std::string& host) {
  WeightedMix<std::string> mix;
  mix.add(host, 1.0);
  return mix;
}

}  // namespace

Pattern parse_pattern(std::string_view text) {
  for (const auto& [pattern, name] : kNames) {
    if (text == name) return pattern;
  }
  throw UsageError(fmt::format(
      "--pattern: '{}' is not a pattern; use fan-out, one-to-one, fan-in, all-to-all or permutation", text));
}

std::string_view pattern_name(Pattern pattern) {
  for (const auto& [p, name] : kNames) {
    if (p == pattern) return name;
  }
  return "?";
}

const std::string& DestinationChooser::pick(Rng& rng) const { return mix_.pick(rng); }

std::vector<DestinationChooser> plan_destinations(Pattern pattern, const std::vector<std::string>& sources,
                                                  const WeightedMix<std::string>& destinations, std::uint64_t seed) {
  std::vector<DestinationChooser> plan(sources.size());
  const auto& hosts = destinations.values();
  switch (pattern) {
    case Pattern::fan_out:
      for (auto& chooser : plan) chooser.mix_ = destinations;
      break;
    case Pattern::fan_in:
      if (hosts.size() != 1) {
        throw UsageError(
            fmt::format("--pattern fan-in sends every source to one host: give one --dst, not {}", hosts.size()));
      }
      for (auto& chooser : plan) chooser.mix_ = destinations;
      break;
    case Pattern::one_to_one:
      if (hosts.size() != sources.size()) {
        throw UsageError(fmt::format("--pattern one-to-one pairs --src and --dst in order: {} sources, {} destinations",
                                     sources.size(), hosts.size()));
      }
      for (std::size_t i = 0; i < sources.size(); ++i) plan[i].mix_ = single(hosts[i]);
      break;
    case Pattern::all_to_all:
      for (std::size_t i = 0; i < sources.size(); ++i) {
        for (std::size_t d = 0; d < hosts.size(); ++d) {
          if (hosts[d] != sources[i]) plan[i].mix_.add(hosts[d], destinations.weights()[d]);
        }
        if (plan[i].mix_.empty()) {
          throw UsageError(fmt::format("--pattern all-to-all: source '{}' has no destination but itself", sources[i]));
        }
      }
      break;
    case Pattern::permutation: {
      if (hosts.size() < sources.size()) {
        throw UsageError(fmt::format("--pattern permutation needs at least as many destinations ({}) as sources ({})",
                                     hosts.size(), sources.size()));
      }
      // A uniformly random matching with no source sending to itself, by
      // rejection (about e tries when the lists are the same hosts).
      Rng rng(seed, 0x7065726dULL);
      std::vector<std::size_t> order(hosts.size());
      for (int attempt = 0;; ++attempt) {
        if (attempt == 10000) {
          throw UsageError("--pattern permutation: no matching avoids sending a source to itself");
        }
        std::iota(order.begin(), order.end(), 0);
        for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
        bool self = false;
        for (std::size_t i = 0; i < sources.size(); ++i) self = self || hosts[order[i]] == sources[i];
        if (!self) break;
      }
      for (std::size_t i = 0; i < sources.size(); ++i) plan[i].mix_ = single(hosts[order[i]]);
      break;
    }
  }
  return plan;
}

}  // namespace xtk
