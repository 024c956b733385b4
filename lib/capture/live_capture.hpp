// The packet logger: libpcap on one or more interfaces, each in its own
// thread, with TPACKET_V3 rings (immediate mode off: the kernel hands over
// whole blocks), nanosecond stamps, a BPF filter and a short snaplen, written
// as standard pcap files (tshark, Wireshark and tcpdump read them), rotated
// by size or time. Or, with `summarize`, no packets on disk: per-flow bytes
// and packets per time bin, written as a trace-bins file.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capture/flow_accounting.hpp"

namespace xtk::capture {

struct CaptureOptions {
  std::vector<std::string> interfaces;
  std::string filter;  // BPF, as tcpdump takes it
  std::uint32_t snaplen = 128;
  std::uint64_t buffer_bytes = 256ULL << 20;
  std::string tstamp;  // libpcap time stamp type: host, adapter, adapter_unsynced, ...; empty: the default
  bool promiscuous = true;
  std::string out = "capture.pcap";             // {if} and {n} are replaced (see capture_path()); "-" = stdout
  std::uint64_t rotate_bytes = 0;               // 0: never
  std::int64_t rotate_ns = 0;                   // 0: never
  std::int64_t duration_ns = 0;                 // 0: until stopped
  std::int64_t stats_every_ns = 1'000'000'000;  // 0: no per-interval lines
  int block_timeout_ms = 100;                   // a ring block is handed over at most this long after its first packet
  bool summarize = false;
  std::int64_t bin_ns = 1'000'000;
  BinKey per = BinKey::flow;
  std::int64_t reorder_ns = 100'000'000;
};

struct InterfaceReport {
  std::string interface;
  std::uint64_t packets = 0;  // handed to xtk-log (written or binned)
  std::uint64_t bytes = 0;    // their wire bytes
  // pcap_stats: packets the socket saw (passing the filter), dropped for lack
  // of ring space, dropped by the interface/driver.
  std::uint64_t received = 0, dropped = 0, if_dropped = 0;
  std::vector<std::string> files;
  std::uint64_t flows = 0, late = 0;  // summarize mode
};

struct CaptureReport {
  std::vector<InterfaceReport> interfaces;
  std::int64_t wall_ns = 0;
  std::int64_t start_realtime_ns = 0;
};

// The file name for `interface` and rotation `index` (nullopt: not rotating):
// "{if}" becomes the interface, "{n}" the index (4 digits); with several
// interfaces and no "{if}", "-IF" goes before the extension, and when
// rotating without "{n}", ".NNNN" goes there.
std::string capture_path(const std::string& pattern, const std::string& interface, bool several,
                         std::optional<std::uint64_t> index);

// Opens every interface first (UsageError for a missing interface or an
// unsupported --tstamp, Error for permissions), then captures until `stop`
// or the duration.
CaptureReport run_capture(const CaptureOptions& options, const std::atomic<bool>& stop);

}  // namespace xtk::capture
