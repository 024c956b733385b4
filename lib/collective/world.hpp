// Who this process is in the job: its rank among the processes, how many
// there are, its rank on its node, and where rank 0's rendezvous listens.
// Taken from flags, torchrun's environment or Slurm's, in that order: flags
// win; torchrun's RANK beats SLURM_PROCID because torchrun inside a Slurm
// allocation starts several workers per Slurm task.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace xtk::collective {

struct WorldFlags {
  std::optional<std::uint32_t> rank, world_size, local_rank;
  std::string master;  // "host[:port]"
  std::optional<std::uint16_t> master_port;
};

struct World {
  std::uint32_t rank = 0;        // this process among the processes
  std::uint32_t world_size = 1;  // processes
  std::uint32_t local_rank = 0;  // this process on its node: picks its GPU(s)
  std::string master_host = "127.0.0.1";
  std::uint16_t master_port = 29500;
  std::string source = "defaults";  // where rank and size came from
};

// `getenv` is injectable for tests. Throws UsageError naming the variable or flag.
World resolve_world(const WorldFlags& flags,
                    const std::function<std::optional<std::string>(const std::string&)>& getenv);
World resolve_world(const WorldFlags& flags);  // the process environment

// Slurm's compressed host lists: "node[1-3,7],gpu-[01-02],login" -> every host, in order.
std::vector<std::string> expand_nodelist(const std::string& list);

}  // namespace xtk::collective
