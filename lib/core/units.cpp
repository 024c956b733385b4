#include "core/units.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <sstream>
#include <utility>

#include "core/error.hpp"

namespace xtk {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Splits "12.5Gbps" into 12.5 and "gbps".
std::pair<double, std::string> split_number(std::string_view text, std::string_view what) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' || text[i] == 'e' ||
                             text[i] == 'E' || text[i] == '+' || text[i] == '-')) {
    // An 'e' not followed by a digit or sign starts a unit, not an exponent.
    if ((text[i] == 'e' || text[i] == 'E') &&
        (i + 1 >= text.size() ||
         !(std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '+' || text[i + 1] == '-'))) {
      break;
    }
    ++i;
  }
  if (i == 0) throw UsageError(fmt::format("'{}' is not a {}: it must start with a number", text, what));
  double value = parse_number(text.substr(0, i));
  std::string unit = lower(text.substr(i));
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  return {value, unit};
}

}  // namespace

double parse_number(std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty() || !std::isfinite(value)) {
    throw UsageError(fmt::format("'{}' is not a number", text));
  }
  return value;
}

std::int64_t parse_wall_clock_ns(const std::string& text) {
  const std::string expected = "give Unix seconds or YYYY-MM-DDTHH:MM:SS[.fff]Z (UTC)";
  if (text.find('T') == std::string::npos) {
    try {
      return static_cast<std::int64_t>(std::llround(parse_number(text) * 1e9));
    } catch (const UsageError&) {
      throw UsageError(fmt::format("'{}': {}", text, expected));
    }
  }
  std::tm tm{};
  const char* rest = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  double fraction = 0;
  if (rest != nullptr && *rest == '.') {
    char* end = nullptr;
    fraction = std::strtod(rest, &end);
    rest = end;
  }
  if (rest == nullptr || !(std::string_view(rest) == "Z" || std::string_view(rest) == "+00:00")) {
    throw UsageError(fmt::format("'{}': {}", text, expected));
  }
  return static_cast<std::int64_t>(timegm(&tm)) * 1'000'000'000 +
         static_cast<std::int64_t>(std::llround(fraction * 1e9));
}

std::vector<int> parse_cpu_list(const std::string& text, const std::string& flag) {
  const long online = std::min(sysconf(_SC_NPROCESSORS_ONLN), 64L);
  const auto number = [&](const std::string& digits) {
    if (digits.empty() || digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string::npos) {
      throw UsageError(fmt::format("{} '{}': expected CPUs like 0,2-3", flag, text));
    }
    return std::stoi(digits);
  };
  std::vector<int> cpus;
  std::istringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    const auto dash = item.find('-');
    const int first = number(item.substr(0, dash));
    const int last = dash == std::string::npos ? first : number(item.substr(dash + 1));
    if (last < first) throw UsageError(fmt::format("{} '{}': a range goes up, {}-{}", flag, text, last, first));
    if (last >= online) throw UsageError(fmt::format("{} '{}': CPUs go from 0 to {} here", flag, text, online - 1));
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  if (cpus.empty()) throw UsageError(fmt::format("{}: no CPU given", flag));
  return cpus;
}

double parse_rate_bps(std::string_view text) {
  auto [value, unit] = split_number(text, "rate");
  static const std::array<std::pair<const char*, double>, 5> prefixes{
      {{"", 1}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}}};
  for (const auto& [prefix, scale] : prefixes) {
    for (const char* suffix : {"", "bps", "bit", "bit/s", "b/s"}) {
      if (unit == std::string(prefix) + suffix) {
        if (value < 0) throw UsageError(fmt::format("rate '{}' is negative", text));
        return value * scale;
      }
    }
  }
  throw UsageError(fmt::format("'{}' is not a rate: use bits/s with an SI prefix, e.g. 800M, 25G, 1.5Gbps", text));
}

double parse_flops(std::string_view text) {
  auto [value, unit] = split_number(text, "FLOP/s value");
  for (std::string_view suffix : {"flop/s", "flops"}) {
    if (unit.ends_with(suffix)) unit.resize(unit.size() - suffix.size());
  }
  static const std::array<std::pair<const char*, double>, 6> prefixes{
      {{"", 1}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}, {"p", 1e15}}};
  for (const auto& [prefix, scale] : prefixes) {
    if (unit == prefix) {
      if (!(value > 0)) throw UsageError(fmt::format("'{}' must be above 0", text));
      return value * scale;
    }
  }
  throw UsageError(fmt::format("'{}' is not FLOP/s: use e.g. 989T or 1.98P", text));
}

std::uint64_t parse_bytes(std::string_view text) {
  auto [value, unit] = split_number(text, "size");
  // KB, MB, GB, TB are powers of 1000; KiB... and the bare K, M, G, T (as
  // nccl-tests' -b/-e and DDP's bucket_cap_mb mean them) powers of 1024.
  static const std::array<std::pair<const char*, double>, 14> units{{{"", 1},
                                                                     {"b", 1},
                                                                     {"kb", 1e3},
                                                                     {"mb", 1e6},
                                                                     {"gb", 1e9},
                                                                     {"tb", 1e12},
                                                                     {"kib", 1024.0},
                                                                     {"mib", 1048576.0},
                                                                     {"gib", 1073741824.0},
                                                                     {"tib", 1099511627776.0},
                                                                     {"k", 1024.0},
                                                                     {"m", 1048576.0},
                                                                     {"g", 1073741824.0},
                                                                     {"t", 1099511627776.0}}};
  for (const auto& [name, scale] : units) {
    if (unit == name) {
      double bytes = value * scale;
      if (bytes < 0 || bytes > 1.8e19) throw UsageError(fmt::format("size '{}' is out of range", text));
      return static_cast<std::uint64_t>(std::llround(bytes));
    }
  }
  throw UsageError(fmt::format("'{}' is not a size: use bytes, e.g. 1500, 64KB (x1000), 32M or 4MiB (x1024)", text));
}

int parse_socket_buffer_bytes(std::string_view text) {
  const std::uint64_t bytes = parse_bytes(text);
  if (bytes > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
    throw UsageError(fmt::format("{} is more than a socket buffer can be (2 GiB - 1)", text));
  }
  return static_cast<int>(bytes);
}

std::int64_t parse_duration_ns(std::string_view text) {
  auto [value, unit] = split_number(text, "duration");
  static const std::array<std::pair<const char*, double>, 7> units{
      {{"", 1e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"µs", 1e3}, {"ns", 1}, {"m", 60e9}}};
  for (const auto& [name, scale] : units) {
    if (unit == name) {
      double ns = value * scale;
      if (ns < 0 || ns > 9.2e18) throw UsageError(fmt::format("duration '{}' is out of range", text));
      return static_cast<std::int64_t>(std::llround(ns));
    }
  }
  throw UsageError(fmt::format("'{}' is not a duration: use e.g. 500us, 1ms, 60s", text));
}

double Load::resolve_bps(double link_bps) const { return is_fraction ? fraction * link_bps : rate_bps; }

Load parse_load(std::string_view text) {
  Load load;
  if (!text.empty() && text.back() == '%') {
    load.is_fraction = true;
    load.fraction = parse_number(text.substr(0, text.size() - 1)) / 100.0;
  } else {
    auto [value, unit] = split_number(text, "load");
    if (unit.empty()) {
      if (value > 1.0) {
        throw UsageError(fmt::format(
            "load '{}' is ambiguous: give a share of the link (0.8 or 80%) or a rate with a unit (8G)", text));
      }
      load.is_fraction = true;
      load.fraction = value;
    } else {
      load.rate_bps = parse_rate_bps(text);
    }
  }
  if (load.fraction < 0 || load.rate_bps < 0) throw UsageError(fmt::format("load '{}' is negative", text));
  return load;
}

double parse_share(std::string_view text) {
  const Load load = parse_load(text);
  if (!load.is_fraction) throw UsageError(fmt::format("'{}' is not a share (30% or 0.3)", text));
  return load.fraction;
}

bool valid_congestion_control(std::string_view name) {
  return name.size() <= kCongestionControlNameMax && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
         });
}

std::string format_rate(double bps) {
  static const std::array<std::pair<double, const char*>, 4> steps{
      {{1e12, "Tbit/s"}, {1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}}};
  for (const auto& [scale, name] : steps) {
    if (std::fabs(bps) >= scale) return fmt::format("{:.2f} {}", bps / scale, name);
  }
  return fmt::format("{:.0f} bit/s", bps);
}

std::string format_bytes(double bytes) {
  static const std::array<std::pair<double, const char*>, 4> steps{
      {{1099511627776.0, "TiB"}, {1073741824.0, "GiB"}, {1048576.0, "MiB"}, {1024.0, "KiB"}}};
  for (const auto& [scale, name] : steps) {
    if (std::fabs(bytes) >= scale) return fmt::format("{:.2f} {}", bytes / scale, name);
  }
  return fmt::format("{:.0f} B", bytes);
}

std::string format_duration(std::int64_t ns) {
  const auto v = static_cast<double>(ns);
  if (ns >= 1'000'000'000) return fmt::format("{:.3f} s", v / 1e9);
  if (ns >= 1'000'000) return fmt::format("{:.3f} ms", v / 1e6);
  if (ns >= 1'000) return fmt::format("{:.3f} us", v / 1e3);
  return fmt::format("{} ns", ns);
}

}  // namespace xtk
