#include "collective/world.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "core/error.hpp"

namespace xtk::collective {
namespace {

using Getenv = std::function<std::optional<std::string>(const std::string&)>;

std::uint64_t env_number(const Getenv& getenv, const std::string& name, std::uint64_t max) {
  const auto text = getenv(name);
  std::uint64_t value = 0;
  const auto* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (text->empty() || ec != std::errc() || ptr != end || value > max) {
    throw UsageError(fmt::format("environment variable {}='{}' is not a whole number up to {}", name, *text, max));
  }
  return value;
}

// "host:port" or "[v6]:port" or a bare host; the port only when given.
std::pair<std::string, std::optional<std::uint16_t>> split_master(const std::string& text) {
  std::string host = text, port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    host = text.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    if (close != std::string::npos && close + 1 < text.size() && text[close + 1] == ':') port = text.substr(close + 2);
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    host = text.substr(0, text.find(':'));
    port = text.substr(text.find(':') + 1);
  }
  if (port.empty()) return {host, std::nullopt};
  std::uint16_t value = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || ptr != port.data() + port.size() || value == 0) {
    throw UsageError(fmt::format("--master: port '{}' in '{}' is not a number 1-65535", port, text));
  }
  return {host, value};
}

}  // namespace

std::vector<std::string> expand_nodelist(const std::string& list) {
  std::vector<std::string> hosts;
  std::size_t i = 0;
  while (i < list.size()) {
    // One entry: a prefix, then optional [ranges], then optional suffix, up to a comma outside brackets.
    std::string prefix;
    while (i < list.size() && list[i] != ',' && list[i] != '[') prefix += list[i++];
    if (i < list.size() && list[i] == '[') {
      const auto close = list.find(']', i);
      if (close == std::string::npos) throw UsageError(fmt::format("host list '{}' has an unclosed '['", list));
      const std::string ranges = list.substr(i + 1, close - i - 1);
      i = close + 1;
      std::string suffix;
      while (i < list.size() && list[i] != ',') suffix += list[i++];
      std::size_t start = 0;
      while (start <= ranges.size()) {
        const auto comma = std::min(ranges.find(',', start), ranges.size());
        const std::string range = ranges.substr(start, comma - start);
        const auto dash = range.find('-');
        const std::string first = range.substr(0, dash);
        const std::string last = dash == std::string::npos ? first : range.substr(dash + 1);
        std::uint64_t a = 0, b = 0;
        const auto parsed_a = std::from_chars(first.data(), first.data() + first.size(), a);
        const auto parsed_b = std::from_chars(last.data(), last.data() + last.size(), b);
        if (first.empty() || last.empty() || parsed_a.ptr != first.data() + first.size() ||
            parsed_b.ptr != last.data() + last.size() || b < a || b - a > 100000) {
          throw UsageError(fmt::format("host list '{}': '{}' is not a range like 1-4 or 07", list, range));
        }
        for (std::uint64_t n = a; n <= b; ++n) {
          hosts.push_back(fmt::format("{}{:0{}}{}", prefix, n, first.size(), suffix));  // keeps leading zeros
        }
        start = comma + 1;
      }
    } else if (!prefix.empty()) {
      hosts.push_back(prefix);
    }
    if (i < list.size() && list[i] == ',') ++i;
  }
  return hosts;
}

World resolve_world(const WorldFlags& flags, const Getenv& getenv) {
  World w;
  const auto has = [&](const std::string& name) { return getenv(name).has_value(); };
  std::optional<std::string> env_master;
  std::optional<std::uint16_t> env_port;
  if (has("MASTER_ADDR")) env_master = *getenv("MASTER_ADDR");
  if (has("MASTER_PORT")) env_port = static_cast<std::uint16_t>(env_number(getenv, "MASTER_PORT", 65535));

  if (has("RANK") || has("WORLD_SIZE")) {
    for (const char* name : {"RANK", "WORLD_SIZE"}) {
      if (!has(name))
        throw UsageError(
            fmt::format("torchrun-style environment: RANK and WORLD_SIZE go together; {} is missing", name));
    }
    w.rank = static_cast<std::uint32_t>(env_number(getenv, "RANK", UINT32_MAX));
    w.world_size = static_cast<std::uint32_t>(env_number(getenv, "WORLD_SIZE", UINT32_MAX));
    if (has("LOCAL_RANK")) w.local_rank = static_cast<std::uint32_t>(env_number(getenv, "LOCAL_RANK", UINT32_MAX));
    w.source = "torchrun environment (RANK, WORLD_SIZE, LOCAL_RANK)";
    // torchrun's agent already listens on MASTER_PORT (its own store): take the next port.
    if (env_port && getenv("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True") env_port = *env_port + 1;
  } else if (has("SLURM_PROCID") && has("SLURM_NTASKS")) {
    w.rank = static_cast<std::uint32_t>(env_number(getenv, "SLURM_PROCID", UINT32_MAX));
    w.world_size = static_cast<std::uint32_t>(env_number(getenv, "SLURM_NTASKS", UINT32_MAX));
    if (has("SLURM_LOCALID"))
      w.local_rank = static_cast<std::uint32_t>(env_number(getenv, "SLURM_LOCALID", UINT32_MAX));
    w.source = "Slurm environment (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID)";
    if (!env_master) {
      // Task 0 runs on the first node of its step (block distribution, srun's default).
      for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"}) {
        if (!has(name)) continue;
        const auto hosts = expand_nodelist(*getenv(name));
        if (!hosts.empty()) env_master = hosts.front();
        break;
      }
    }
    // A port per job, so jobs sharing a node do not collide; below Linux's
    // ephemeral range (32768-60999), where Gloo's and NCCL's own sockets land.
    if (!env_port && has("SLURM_JOB_ID")) {
      env_port = static_cast<std::uint16_t>(20000 + env_number(getenv, "SLURM_JOB_ID", UINT64_MAX) % 10000);
    }
  }
  if (env_master) w.master_host = *env_master;
  if (env_port) w.master_port = *env_port;

  if (flags.rank || flags.world_size) {
    if (!flags.rank || !flags.world_size) throw UsageError("--rank and --world-size go together");
    w.rank = *flags.rank;
    w.world_size = *flags.world_size;
    w.source = "flags (--rank, --world-size)";
  }
  if (flags.local_rank) w.local_rank = *flags.local_rank;
  if (!flags.master.empty()) {
    auto [host, port] = split_master(flags.master);
    if (!host.empty()) w.master_host = host;
    if (port) w.master_port = *port;
  }
  if (flags.master_port) w.master_port = *flags.master_port;
  if (w.world_size == 0) throw UsageError("the job needs at least 1 process (world size is 0)");
  if (w.rank >= w.world_size) {
    throw UsageError(
        fmt::format("rank {} is not below the world size {} (from the {})", w.rank, w.world_size, w.source));
  }
  return w;
}

World resolve_world(const WorldFlags& flags) {
  return resolve_world(flags, [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): read before any thread starts
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
}

}  // namespace xtk::collective
