#include "capture/counter_source.hpp"

#include <fnmatch.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"

namespace xtk::capture {
namespace {

namespace fs = std::filesystem;

bool is_glob(const std::string& text) { return text.find_first_of("*?[") != std::string::npos; }

bool matches_any(const std::vector<std::string>& globs, const std::string& name) {
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return fnmatch(g.c_str(), name.c_str(), 0) == 0; });
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string list_text(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  constexpr std::size_t kShown = 40;
  if (names.size() <= kShown) return fmt::format("{}", fmt::join(names, ", "));
  return fmt::format("{}, ... ({} in all)", fmt::join(names.begin(), names.begin() + kShown, ", "), names.size());
}

// The targets `target` names among `available`: itself, or what its glob
// matches (a glob skips loopback unless it names it).
std::vector<std::string> targets(const SourceSpec& spec, const std::vector<std::string>& available,
                                 std::string_view what, std::string_view what_plural) {
  std::vector<std::string> out;
  if (!is_glob(spec.target)) {
    if (std::find(available.begin(), available.end(), spec.target) == available.end()) {
      throw UsageError(fmt::format("--source {}: no {} '{}' here ({}: {})", spec.text, what, spec.target, what_plural,
                                   list_text(available)));
    }
    return {spec.target};
  }
  for (const auto& name : available) {
    if (name == "lo" && spec.target != "lo") continue;
    if (fnmatch(spec.target.c_str(), name.c_str(), 0) == 0) out.push_back(name);
  }
  if (out.empty()) {
    throw UsageError(fmt::format("--source {}: no {} matches '{}' ({}: {})", spec.text, what, spec.target, what_plural,
                                 list_text(available)));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> files_in(const fs::path& dir, const std::vector<std::string>& globs) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& name : entries(dir)) {
    if (matches_any(globs, name)) out.emplace_back(name, (dir / name).string());
  }
  return out;
}

void open_rdma(const SourceSpec& spec, const SystemPaths& paths, std::vector<std::unique_ptr<CounterSource>>& out) {
  const fs::path root = fs::path(paths.sys) / "class/infiniband";
  const auto devices = entries(root);
  if (devices.empty()) {
    throw UsageError(
        fmt::format("--source {}: no RDMA devices here ({} is empty or missing)", spec.text, root.string()));
  }
  const auto slash = spec.target.find('/');
  SourceSpec device_spec = spec;
  device_spec.target = spec.target.substr(0, slash);
  for (const auto& device : targets(device_spec, devices, "RDMA device", "RDMA devices")) {
    std::vector<std::string> ports = entries(root / device / "ports");
    if (slash != std::string::npos) {
      SourceSpec port_spec = spec;
      port_spec.target = spec.target.substr(slash + 1);
      ports = targets(port_spec, ports, fmt::format("port of {}", device), fmt::format("ports of {}", device));
    } else if (auto device_wide = files_in(root / device / "hw_counters", spec.globs); !device_wide.empty()) {
      out.push_back(open_sysfs_counters("rdma:" + device, device_wide));
    }
    for (const auto& port : ports) {
      const fs::path dir = root / device / "ports" / port;
      auto files = files_in(dir / "counters", spec.globs);
      for (auto& hw : files_in(dir / "hw_counters", spec.globs)) {
        // Both directories name their own counters; should a name be in both, the hw one says where it is from.
        const bool clash = std::any_of(files.begin(), files.end(), [&](const auto& f) { return f.first == hw.first; });
        if (clash) hw.first = "hw_counters/" + hw.first;
        files.push_back(std::move(hw));
      }
      out.push_back(open_sysfs_counters(fmt::format("rdma:{}/{}", device, port), files));
    }
  }
}

}  // namespace

SourceSpec parse_source_spec(const std::string& text) {
  SourceSpec spec;
  spec.text = text;
  std::string head = text;
  if (const auto eq = text.find('='); eq != std::string::npos) {
    head = text.substr(0, eq);
    std::string list = text.substr(eq + 1);
    std::size_t start = 0;
    while (start <= list.size()) {
      const auto comma = std::min(list.find(',', start), list.size());
      if (comma > start) spec.globs.push_back(list.substr(start, comma - start));
      start = comma + 1;
    }
    if (spec.globs.empty()) throw UsageError(fmt::format("--source {}: no counter names after '='", text));
  } else {
    spec.globs = {"*"};
  }
  const auto colon = head.find(':');
  spec.kind = head.substr(0, colon);
  spec.target = colon == std::string::npos ? "" : head.substr(colon + 1);
  if (spec.kind == "snmp") {
    if (!spec.target.empty()) throw UsageError(fmt::format("--source {}: snmp takes no target (snmp=GLOB,...)", text));
    return spec;
  }
  if (spec.kind != "net" && spec.kind != "ethtool" && spec.kind != "rdma") {
    throw UsageError(
        fmt::format("--source {}: unknown kind '{}' (net:IF, ethtool:IF, rdma:DEV[/PORT], snmp)", text, spec.kind));
  }
  if (spec.target.empty()) {
    throw UsageError(fmt::format("--source {}: {} needs a target, e.g. {}:eth0", text, spec.kind, spec.kind));
  }
  return spec;
}

std::vector<std::unique_ptr<CounterSource>> open_sources(const SourceSpec& spec, const SystemPaths& paths) {
  std::vector<std::unique_ptr<CounterSource>> out;
  const fs::path net = fs::path(paths.sys) / "class/net";
  if (spec.kind == "net") {
    for (const auto& interface : targets(spec, entries(net), "interface", "interfaces")) {
      const auto files = files_in(net / interface / "statistics", spec.globs);
      // The live system's interfaces answer netlink; a tree given by a test does not.
      if (paths.sys == SystemPaths().sys && !files.empty()) {
        std::vector<std::string> names;
        names.reserve(files.size());
        for (const auto& [name, path] : files) names.push_back(name);
        if (auto source = open_netlink_counters(interface, names)) {
          out.push_back(std::move(source));
          continue;
        }
      }
      out.push_back(open_sysfs_counters("net:" + interface, files));
    }
  } else if (spec.kind == "ethtool") {
    const bool one = !is_glob(spec.target);
    for (const auto& interface : targets(spec, entries(net), "interface", "interfaces")) {
      auto source = open_ethtool_counters(interface, spec.globs);
      if (!source && one) {
        throw UsageError(fmt::format("--source {}: the driver of {} has no ethtool statistics", spec.text, interface));
      }
      if (source) out.push_back(std::move(source));
    }
  } else if (spec.kind == "rdma") {
    open_rdma(spec, paths, out);
  } else {
    out.push_back(open_snmp_counters(paths.proc, spec.globs));
  }
  for (const auto& source : out) {
    if (source->counters().empty()) {
      throw UsageError(fmt::format("--source {}: no counter of {} matches {} (xtk-log counters --list shows them)",
                                   spec.text, source->name(), fmt::join(spec.globs, ",")));
    }
  }
  if (out.empty()) throw UsageError(fmt::format("--source {}: nothing to sample", spec.text));
  return out;
}

std::vector<std::unique_ptr<CounterSource>> open_all_sources(const SystemPaths& paths) {
  std::vector<std::unique_ptr<CounterSource>> out;
  const fs::path net = fs::path(paths.sys) / "class/net";
  for (const auto& interface : entries(net)) {
    out.push_back(open_sysfs_counters("net:" + interface, files_in(net / interface / "statistics", {"*"})));
    if (auto source = open_ethtool_counters(interface, {"*"})) out.push_back(std::move(source));
  }
  if (!entries(fs::path(paths.sys) / "class/infiniband").empty()) {
    open_rdma(parse_source_spec("rdma:*"), paths, out);
  }
  out.push_back(open_snmp_counters(paths.proc, {"*"}));
  return out;
}

}  // namespace xtk::capture
