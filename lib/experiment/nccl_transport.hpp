// NCCL's own report of how its ranks connect, from the NCCL_DEBUG=INFO lines
//   host:pid:tid [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0
//   host:pid:tid [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via P2P/CUMEM/read
// A step's evidence that the training traffic crossed the testbed's network:
// on one host, NCCL prefers NVLink (P2P) and shared memory (SHM), which no
// cross traffic can touch.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xtk {

struct NcclConnection {
  unsigned from = 0, to = 0;  // ranks
  std::string via;            // "NET/Socket/0", "P2P/CUMEM/read", "SHM/direct/direct", ...
};

std::vector<NcclConnection> parse_nccl_connections(std::string_view log);

// Why the connections in `log` (a rank's output, named `source` in messages)
// do not prove that the traffic went over the network through transports
// whose name starts with `network_prefix` ("NET/Socket" on a netns testbed,
// "NET/" between hosts); nullopt when they do. A log without connection
// lines proves nothing: a reason when `connections_required`, else nullopt.
std::optional<std::string> nccl_bypass(std::string_view log, const std::string& source,
                                       const std::string& network_prefix, bool connections_required = true);

}  // namespace xtk
