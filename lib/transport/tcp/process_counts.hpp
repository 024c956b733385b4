// The TCP retransmissions and retransmission timeouts of this process's own
// connections: every TCP socket it holds, whoever opened it (Gloo's pairs,
// NCCL's socket transport, the job's control connections), read from each
// socket's TCP_INFO. A host's counters (/proc/net/snmp) mix in every other
// process of the host, the cross traffic's server among them; these count the
// job's traffic alone, on each of its hosts.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>

namespace xtk {

struct TcpCounts {
  std::size_t connections = 0;    // TCP sockets read
  std::uint64_t retransmits = 0;  // segments sent again (tcpi_total_retrans)
  // Retransmission timeouts, SYN's included (tcpi_total_rto): only kernels
  // from Linux 6.7 count them. The kernel counts none while the peer's
  // window is zero (its timer then probes the window).
  std::optional<std::uint64_t> timeouts;
  // Time a sender had data it could not send for want of the receiver's
  // window (tcpi_rwnd_limited), summed over the sockets: a slow reader, or a
  // stalled one.
  std::uint64_t rwnd_limited_us = 0;
};

class ProcessTcpCounts {
 public:
  ProcessTcpCounts() { take(); }  // counts from now on
  // What the process's TCP sockets counted since the previous call. A socket
  // closed in between loses what it counted after that call; one opened
  // counts from its start.
  TcpCounts take();

 private:
  struct Totals {
    std::uint32_t retransmits = 0;
    std::uint16_t timeouts = 0;
    std::uint64_t rwnd_limited_us = 0;
  };
  std::unordered_map<ino_t, Totals> last_;  // by socket inode: a closed fd's number is reused
};

}  // namespace xtk
