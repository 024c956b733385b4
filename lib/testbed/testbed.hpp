// A single-host testbed of network namespaces: N hosts on one Linux bridge
// (the ToR switch, in its own namespace), with tc shaping on any switch port
// or host NIC. Nothing is created in the caller's namespace.
//
//   host hK (netns <prefix>-hK): eth0 = 10.77.0.(K+1)/24, fd77::(K+1)/64
//   switch  (netns <prefix>-sw): br0 with ports pK, one per host
//
// The seed's configurations: A (egress bottleneck: the training host's own
// NIC carries the cross traffic) shapes `nic:hK`; B (ingress bottleneck: a
// separate host sends into hK's link) shapes `port:hK`, the switch port
// towards hK.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xtk {

struct Shaping {
  enum class Where { port, nic } where = Where::port;
  std::size_t host = 0;
  double rate_bps = 0;
  enum class Qdisc { htb, tbf } qdisc = Qdisc::htb;
  // The shaper's queue in bytes, as a switch port's buffer is; 0 keeps the
  // qdisc's own limit, which counts packets (htb: 1,000, each up to a 64 KiB
  // GSO super-packet with offloads on) or time (tbf: 50 ms at the rate).
  std::uint64_t queue_bytes = 0;
};

// "port:h3=1G", "nic:h0=10G/tbf", "port:h0=1G/queue=1MB". Throws UsageError.
Shaping parse_shaping(const std::string& text);

// Why a namespace's kernel refused congestion control `name`, and what to do,
// from the machine's lists (net.ipv4.tcp_available_congestion_control and
// tcp_allowed_congestion_control, space-separated): outside the machine's own
// namespace only an allowed one may be the default.
std::string congestion_control_refusal(const std::string& name, const std::string& ns, const std::string& available,
                                       const std::string& allowed);

struct TestbedSpec {
  std::string name;  // unique per testbed: namespaces are "xtk-<name>-hK" and "xtk-<name>-sw"
  std::size_t hosts = 2;
  std::vector<Shaping> shaping;
  bool offloads = true;  // false: ethtool -K tso/gso/gro off on every interface (MTU-size frames)
  std::uint32_t mtu = 1500;
  // Receive packet steering on every interface: the packet processing of the
  // whole testbed (switch, shapers, receivers) runs on these CPUs, as IRQ
  // affinity keeps it off a real host's timing cores. Empty: where it falls.
  std::vector<int> net_cpus;
  // Every host's default TCP congestion control (net.ipv4.tcp_congestion_control
  // in its namespace), so results do not hang on this machine's default.
  // Empty: the one each namespace takes from the machine's.
  std::string congestion_control;
  // TCP's least retransmission timeout on every host's routes (ip route
  // rto_min), in ms; 0 keeps the kernel's 200 ms. The timeout also decides
  // when an idle connection restarts from its initial window, so a testbed
  // that dilates time dilates this floor too (docs/experiments.md).
  std::uint32_t rto_min_ms = 0;
  // What rto_min may be: Linux bounds every retransmission timeout by TCP_RTO_MAX.
  static constexpr std::int64_t kLeastRtoMinNs = 1'000'000, kMostRtoMinNs = 120'000'000'000;
  static constexpr std::string_view kRtoMinRange = "1ms to 120s";  // the two above, as errors name them

  // The least queue a shaping rule may set: two of the largest packets the
  // testbed sends (GSO super-packets with offloads on, else full frames).
  std::uint64_t min_queue_bytes() const;
};

class Testbed {
 public:
  // Builds the testbed, first removing any leftover one of the same name.
  // Anything half-built is torn down before an error is thrown. Needs root.
  explicit Testbed(TestbedSpec spec);
  ~Testbed();  // tears down (processes in its namespaces first)
  Testbed(const Testbed&) = delete;
  Testbed& operator=(const Testbed&) = delete;

  const TestbedSpec& spec() const { return spec_; }
  // What building it changed on the machine beyond its namespaces, for the
  // user to hear (a congestion control allowed); empty: nothing.
  const std::string& note() const { return note_; }
  // Leaves the testbed up when this object goes away (xtk-testbed up).
  void keep() { keep_ = true; }
  std::string host_ns(std::size_t host) const;
  std::string switch_ns() const;
  static std::string host_name(std::size_t host);
  static std::string ipv4(std::size_t host);  // 10.77.0.(host+1)
  static std::string ipv6(std::size_t host);  // fd77::(host+1)
  // TCP payload per byte that the testbed's shapers and interface counters
  // count (Ethernet frames without FCS), for full-size IPv4 segments with
  // timestamps: (MTU - 52) / (MTU + 14), 0.956 at 1500.
  static double tcp_payload_share(std::uint32_t mtu);
  // The interface that a shaping rule applies to ("pK" in the switch, "eth0" in hK).
  std::pair<std::string, std::string> shaped_interface(const Shaping& s) const;

  // argv run inside host's namespace: "ip netns exec <ns> argv...".
  std::vector<std::string> in_host(std::size_t host, const std::vector<std::string>& argv) const;

  // Removes every namespace of testbed `name` (idempotent; kills what runs in them).
  static void tear_down(const std::string& name);
  // Whether this process can build testbeds (root, `ip` present); the reason if not.
  static std::optional<std::string> unavailable_reason();

 private:
  void build();
  TestbedSpec spec_;
  std::string note_;
  bool keep_ = false;
};

}  // namespace xtk
