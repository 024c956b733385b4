// Counters the sampler reads, grouped by where they come from:
//
//   net:IF      /sys/class/net/IF/statistics/*            (rx_bytes, tx_packets, rx_dropped, ...),
//               read with one RTM_GETSTATS netlink request on a live system
//   ethtool:IF  every driver statistic, one SIOCETHTOOL    (mlx5: rx_bytes_phy, rx_prio3_pause, ...)
//   rdma:DEV/P  /sys/class/infiniband/DEV/ports/P/{counters,hw_counters}/*
//   rdma:DEV    /sys/class/infiniband/DEV/hw_counters/*    (device-wide, where the driver has them)
//   snmp        /proc/net/snmp and /proc/net/netstat       (Tcp:RetransSegs, TcpExt:TCPTimeouts, ...)
//
// A source stays open for the whole run (files by descriptor, read with
// pread; a netlink socket) and reads all its counters in one go.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace xtk::capture {

class CounterSource {
 public:
  virtual ~CounterSource() = default;
  const std::string& name() const { return name_; }
  const std::vector<std::string>& counters() const { return counters_; }
  // Reads every counter into values[0 .. counters().size()); false when the
  // source went away, with why() saying what happened.
  virtual bool read(std::uint64_t* values) = 0;
  const std::string& why() const { return why_; }

 protected:
  std::string name_;
  std::vector<std::string> counters_;
  std::string why_;
};

// "net:eth0", "ethtool:eth*=rx_*_phy,tx_*_phy", "rdma:mlx5_0/1=port_xmit_data", "snmp=Tcp:RetransSegs".
// The target may be a glob; the counter globs default to every counter.
struct SourceSpec {
  std::string text;  // as given, for messages
  std::string kind;  // net, ethtool, rdma, snmp
  std::string target;
  std::vector<std::string> globs;
};
SourceSpec parse_source_spec(const std::string& text);  // UsageError on a bad spec

// Where the kernel's files are; tests point these at a fake tree.
struct SystemPaths {
  std::string sys = "/sys";
  std::string proc = "/proc";
};

// Every source the spec names, with the counters its globs select. Throws
// UsageError naming what is missing: no such interface or device (and what
// exists), no counter matching a glob (and what counters there are).
std::vector<std::unique_ptr<CounterSource>> open_sources(const SourceSpec& spec, const SystemPaths& paths = {});

// One source per kind and interface/device found here, all counters: what --list prints.
std::vector<std::unique_ptr<CounterSource>> open_all_sources(const SystemPaths& paths = {});

// The kinds of source, built by the files that read them.
std::unique_ptr<CounterSource> open_sysfs_counters(std::string name,
                                                   const std::vector<std::pair<std::string, std::string>>& files);
// net:IF through RTM_GETSTATS; nullptr when netlink cannot serve these counters (sysfs then does).
std::unique_ptr<CounterSource> open_netlink_counters(const std::string& interface,
                                                     const std::vector<std::string>& counters);
std::unique_ptr<CounterSource> open_ethtool_counters(const std::string& interface,
                                                     const std::vector<std::string>& globs);
std::unique_ptr<CounterSource> open_snmp_counters(const std::string& proc, const std::vector<std::string>& globs);

}  // namespace xtk::capture
