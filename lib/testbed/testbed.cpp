#include "testbed/testbed.hpp"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "core/error.hpp"
#include "core/file_lock.hpp"
#include "core/kernel_files.hpp"
#include "core/process.hpp"
#include "core/units.hpp"

namespace xtk {
namespace {

std::string ns_prefix(const std::string& name) { return "xtk-" + name; }

// The hosts' subnets (ipv4(), ipv6()): the one route each host has.
constexpr const char* kSubnetV4 = "10.77.0.0/24";
constexpr const char* kSubnetV6 = "fd77::/64";

void ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  run_checked(argv);
}

void tc(const std::string& ns, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"ip", "netns", "exec", ns, "tc"};
  argv.insert(argv.end(), args.begin(), args.end());
  run_checked(argv);
}

std::string tc_rate(double bps) { return fmt::format("{}bit", static_cast<std::uint64_t>(std::llround(bps))); }

// Room for two GSO super-packets (128 KiB) or a millisecond at the rate, whichever is more, so
// offloaded traffic is shaped, not dropped, by a token bucket.
std::string bucket_bytes(double bps) {
  const double bytes = std::max(2.0 * 65536.0, bps / 8.0 / 1000.0);
  return fmt::format("{}b", static_cast<std::uint64_t>(bytes));
}

// Steers the receive processing of `dev` in `ns` to `cpus` (RPS).
void steer(const std::string& ns, const std::string& dev, const std::vector<int>& cpus) {
  std::uint64_t mask = 0;
  for (int cpu : cpus) mask |= std::uint64_t{1} << cpu;
  run_checked({"ip", "netns", "exec", ns, "sh", "-c",
               fmt::format("echo {:x} > /sys/class/net/{}/queues/rx-0/rps_cpus", mask, dev)});
}

bool listed(const std::string& list, const std::string& name) {
  std::istringstream words(list);
  std::string word;
  while (words >> word) {
    if (word == name) return true;
  }
  return false;
}

bool try_default_congestion_control(const std::string& ns, const std::string& name) {
  return run_command({"ip", "netns", "exec", ns, "sh", "-c",
                      fmt::format("echo {} > /proc/sys/net/ipv4/tcp_congestion_control", name)})
      .ok();
}

// Sets the namespace's default TCP congestion control. Writing the sysctl as
// root also loads the algorithm's module. Outside the machine's own namespace
// only an allowed algorithm may be the default (a kernel built with bbr allows
// `reno bbr`): one the kernel has is then allowed, as the refusal would tell
// root to do by hand, and `note` says so.
void set_default_congestion_control(const std::string& ns, const std::string& name, std::string& note) {
  if (try_default_congestion_control(ns, name)) return;
  // The allowed list is the machine's: testbeds built at once each widen it
  // in turn, or one's write would drop the other's addition.
  const std::string lock_dir = std::filesystem::is_directory("/run/lock") ? "/run/lock" : "/tmp";
  const FileLock turn(lock_dir + "/xtk-tcp-allowed-congestion-control.lock", FileLock::Wait::yes);
  if (try_default_congestion_control(ns, name)) return;
  const std::string allowed_file = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
  const std::string available = read_first_line("/proc/sys/net/ipv4/tcp_available_congestion_control");
  const std::string allowed = read_first_line(allowed_file);
  if (listed(available, name) && !listed(allowed, name)) {
    const std::string wider = allowed.empty() ? name : allowed + " " + name;
    if (run_command({"sh", "-c", fmt::format("echo '{}' > {}", wider, allowed_file)}).ok() &&
        try_default_congestion_control(ns, name)) {
      note = fmt::format(
          "allowed {} outside the machine's own namespace, so the testbed's hosts may default to it: "
          "net.ipv4.tcp_allowed_congestion_control was '{}', is '{}' until the next boot",
          name, allowed, read_first_line(allowed_file));
      return;
    }
  }
  throw Error(congestion_control_refusal(name, ns, available, read_first_line(allowed_file)));
}

}  // namespace

std::string congestion_control_refusal(const std::string& name, const std::string& ns, const std::string& available,
                                       const std::string& allowed) {
  if (!listed(available, name)) {
    return fmt::format(
        "congestion control '{}': the kernel refused it in {} (available: {}; load its module, "
        "e.g. modprobe tcp_{})",
        name, ns, available, name);
  }
  if (!listed(allowed, name)) {
    return fmt::format(
        "congestion control '{}': the kernel refused it in {}: outside the machine's own namespace "
        "only an allowed one may be the default (net.ipv4.tcp_allowed_congestion_control: {}); "
        "allow it on this machine: sysctl -w net.ipv4.tcp_allowed_congestion_control='{} {}'",
        name, ns, allowed, allowed, name);
  }
  return fmt::format("congestion control '{}': the kernel refused it in {} (available: {}, allowed: {})", name, ns,
                     available, allowed);
}

Shaping parse_shaping(const std::string& text) {
  Shaping s;
  const auto colon = text.find(':');
  const auto eq = text.find('=');
  if (colon == std::string::npos || eq == std::string::npos || eq < colon) {
    throw UsageError(fmt::format("--shape '{}': expected port:hK=RATE or nic:hK=RATE[/htb|/tbf][/queue=BYTES]", text));
  }
  const std::string where = text.substr(0, colon);
  if (where == "port") {
    s.where = Shaping::Where::port;
  } else if (where == "nic") {
    s.where = Shaping::Where::nic;
  } else {
    throw UsageError(
        fmt::format("--shape '{}': '{}' is neither port (switch port towards the host) nor nic", text, where));
  }
  const std::string host = text.substr(colon + 1, eq - colon - 1);
  if (host.size() < 2 || host[0] != 'h' || host.find_first_not_of("0123456789", 1) != std::string::npos) {
    throw UsageError(fmt::format("--shape '{}': host '{}' must be hK (h0, h1, ...)", text, host));
  }
  s.host = std::stoul(host.substr(1));
  std::string rate = text.substr(eq + 1);
  const auto slash = rate.find('/');
  std::istringstream options(slash == std::string::npos ? std::string() : rate.substr(slash + 1));
  rate = rate.substr(0, slash);
  for (std::string option; std::getline(options, option, '/');) {
    if (option == "tbf") {
      s.qdisc = Shaping::Qdisc::tbf;
    } else if (option == "htb") {
      s.qdisc = Shaping::Qdisc::htb;
    } else if (option.starts_with("queue=")) {
      s.queue_bytes = parse_bytes(option.substr(6));
      if (s.queue_bytes == 0) throw UsageError(fmt::format("--shape '{}': the queue must be above 0 bytes", text));
    } else {
      throw UsageError(fmt::format("--shape '{}': '{}' is neither htb, tbf nor queue=BYTES", text, option));
    }
  }
  s.rate_bps = parse_rate_bps(rate);
  if (s.rate_bps <= 0) throw UsageError(fmt::format("--shape '{}': the rate must be above 0", text));
  return s;
}

std::string Testbed::host_ns(std::size_t host) const { return ns_prefix(spec_.name) + "-" + host_name(host); }
std::string Testbed::host_name(std::size_t host) { return fmt::format("h{}", host); }
std::string Testbed::switch_ns() const { return ns_prefix(spec_.name) + "-sw"; }
std::string Testbed::ipv4(std::size_t host) { return fmt::format("10.77.0.{}", host + 1); }
std::string Testbed::ipv6(std::size_t host) { return fmt::format("fd77::{:x}", host + 1); }

std::pair<std::string, std::string> Testbed::shaped_interface(const Shaping& s) const {
  if (s.where == Shaping::Where::port) return {switch_ns(), fmt::format("p{}", s.host)};
  return {host_ns(s.host), "eth0"};
}

double Testbed::tcp_payload_share(std::uint32_t mtu) {
  constexpr double kEthernet = 14;  // what skb->len adds to the IP packet on a veth
  return (mtu + kEthernet - kTcpFrameHeaderBytes) / (mtu + kEthernet);
}

std::uint64_t TestbedSpec::min_queue_bytes() const {
  constexpr std::uint64_t kGsoMax = 65536 + 14;  // a GSO super-packet and its Ethernet header
  return 2 * (offloads ? kGsoMax : mtu + 14);
}

std::vector<std::string> Testbed::in_host(std::size_t host, const std::vector<std::string>& argv) const {
  std::vector<std::string> out{"ip", "netns", "exec", host_ns(host)};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::optional<std::string> Testbed::unavailable_reason() {
  if (geteuid() != 0) return "network namespaces need root";
  try {
    if (!run_command({"ip", "-V"}).ok()) return "the 'ip' command (iproute2) does not run";
  } catch (const Error&) {
    return "the 'ip' command (iproute2) is not installed";
  }
  return std::nullopt;
}

Testbed::Testbed(TestbedSpec spec) : spec_(std::move(spec)) {
  if (spec_.name.empty() || spec_.name.size() > 20 ||
      spec_.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos) {
    throw UsageError(fmt::format("testbed name '{}' must be 1-20 of [a-z0-9-]", spec_.name));
  }
  if (spec_.hosts < 1 || spec_.hosts > 250) throw UsageError("a testbed has 1 to 250 hosts");
  for (const auto& s : spec_.shaping) {
    if (s.host >= spec_.hosts) {
      throw UsageError(fmt::format("--shape: host h{} does not exist (hosts h0-h{})", s.host, spec_.hosts - 1));
    }
    if (s.queue_bytes > 0 && s.queue_bytes < spec_.min_queue_bytes()) {
      throw UsageError(
          fmt::format("--shape: a queue of {} bytes at h{} is less than two of the largest packets ({} "
                      "bytes{}): it would drop them all",
                      s.queue_bytes, s.host, spec_.min_queue_bytes(),
                      spec_.offloads ? ", GSO super-packets with offloads on" : ""));
    }
  }
  if (std::int64_t{spec_.rto_min_ms} * 1'000'000 > TestbedSpec::kMostRtoMinNs) {
    throw UsageError(fmt::format("rto_min {} ms is outside {} (Linux bounds every retransmission timeout)",
                                 spec_.rto_min_ms, TestbedSpec::kRtoMinRange));
  }
  if (const auto& cc = spec_.congestion_control; !cc.empty() && !valid_congestion_control(cc)) {
    throw UsageError(fmt::format("'{}' is not a congestion control name ({})", cc, kCongestionControlNameRule));
  }
  tear_down(spec_.name);
  try {
    build();
  } catch (...) {
    tear_down(spec_.name);
    throw;
  }
}

Testbed::~Testbed() {
  if (keep_) return;
  try {
    tear_down(spec_.name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xtk testbed %s: tear-down failed: %s\n", spec_.name.c_str(), e.what());
  }
}

void Testbed::build() {
  const std::string sw = switch_ns();
  ip({"netns", "add", sw});
  ip({"-n", sw, "link", "set", "lo", "up"});
  ip({"-n", sw, "link", "add", "br0", "type", "bridge"});
  ip({"-n", sw, "link", "set", "br0", "up"});
  const std::string mtu = std::to_string(spec_.mtu);
  for (std::size_t h = 0; h < spec_.hosts; ++h) {
    const std::string ns = host_ns(h);
    const std::string port = fmt::format("p{}", h);
    ip({"netns", "add", ns});
    ip({"-n", ns, "link", "set", "lo", "up"});
    // Both ends are created directly in their namespaces: no name ever
    // appears in the caller's namespace, so parallel testbeds cannot collide.
    ip({"-n", ns, "link", "add", "eth0", "mtu", mtu, "type", "veth", "peer", "name", port, "netns", sw, "mtu", mtu});
    ip({"-n", sw, "link", "set", port, "master", "br0"});
    ip({"-n", sw, "link", "set", port, "up"});
    ip({"-n", ns, "addr", "add", ipv4(h) + "/24", "dev", "eth0"});
    ip({"-n", ns, "addr", "add", ipv6(h) + "/64", "dev", "eth0", "nodad"});
    ip({"-n", ns, "link", "set", "eth0", "up"});
    if (spec_.rto_min_ms > 0) {
      const std::string rto = fmt::format("{}ms", spec_.rto_min_ms);
      ip({"-n", ns, "route", "replace", kSubnetV4, "dev", "eth0", "proto", "kernel", "scope", "link", "src", ipv4(h),
          "rto_min", rto});
      ip({"-n", ns, "-6", "route", "replace", kSubnetV6, "dev", "eth0", "proto", "kernel", "metric", "256", "rto_min",
          rto});
    }
    if (!spec_.offloads) {
      run_checked({"ip", "netns", "exec", ns, "ethtool", "-K", "eth0", "tso", "off", "gso", "off", "gro", "off"});
      run_checked({"ip", "netns", "exec", sw, "ethtool", "-K", port, "tso", "off", "gso", "off", "gro", "off"});
    }
    if (!spec_.net_cpus.empty()) {
      steer(ns, "eth0", spec_.net_cpus);
      steer(sw, port, spec_.net_cpus);
    }
    if (!spec_.congestion_control.empty()) set_default_congestion_control(ns, spec_.congestion_control, note_);
  }
  for (const auto& s : spec_.shaping) {
    const auto [ns, dev] = shaped_interface(s);
    const std::string queue = fmt::format("{}b", s.queue_bytes);
    if (s.qdisc == Shaping::Qdisc::tbf) {
      tc(ns, {"qdisc", "replace", "dev", dev, "root", "tbf", "rate", tc_rate(s.rate_bps), "burst",
              bucket_bytes(s.rate_bps), s.queue_bytes > 0 ? "limit" : "latency", s.queue_bytes > 0 ? queue : "50ms"});
    } else {
      tc(ns, {"qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1"});
      tc(ns, {"class", "replace", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", tc_rate(s.rate_bps),
              "ceil", tc_rate(s.rate_bps), "burst", bucket_bytes(s.rate_bps), "cburst", bucket_bytes(s.rate_bps)});
      // The class's queue counts bytes (a GSO super-packet counts its every segment), as a switch's buffer does.
      if (s.queue_bytes > 0) tc(ns, {"qdisc", "replace", "dev", dev, "parent", "1:1", "bfifo", "limit", queue});
    }
  }
}

void Testbed::tear_down(const std::string& name) {
  const std::string prefix = ns_prefix(name) + "-";
  std::vector<std::string> namespaces;
  std::istringstream list(run_command({"ip", "netns", "list"}).output);
  for (std::string line; std::getline(list, line);) {
    const std::string ns = line.substr(0, line.find(' '));
    if (ns.rfind(prefix, 0) == 0 && ns.find('-', prefix.size()) == std::string::npos) namespaces.push_back(ns);
  }
  for (const auto& ns : namespaces) {
    // Processes still inside are ours: the testbed started them.
    std::istringstream pids(run_command({"ip", "netns", "pids", ns}).output);
    for (std::string pid; pids >> pid;) {
      if (pid.find_first_not_of("0123456789") == std::string::npos) kill(static_cast<pid_t>(std::stol(pid)), SIGKILL);
    }
  }
  for (const auto& ns : namespaces) run_command({"ip", "netns", "delete", ns});
}

}  // namespace xtk
