// What ran, recorded in every step's run.json ("provenance"), so that an
// experiment directory says how to run it again: xtk's version and git
// revision, each host's kernel and its data NIC's driver and firmware, and
// (per step) the NCCL and CUDA versions the ranks reported.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "experiment/executor.hpp"

namespace xtk {

// Per host of the executor: {"host", "address", "kernel", "nic": {"interface",
// "driver", "version", "firmware"}}, asked once through the executor (uname -r
// and ethtool -i; "unknown" where a host lacks them). `scratch_dir` holds the
// answers' logs while they are read.
nlohmann::json describe_hosts(Executor& executor, const std::string& scratch_dir);

// A host's answer to describe_hosts' command, parsed (exposed for tests).
nlohmann::json parse_host_answer(std::string_view text);

// From a rank's NCCL_DEBUG=INFO output ("NCCL INFO NCCL version 2.28.9+cuda13.0"):
// {"nccl": "2.28.9", "cuda": "13.0"}; nullopt when the line is absent.
std::optional<nlohmann::json> nccl_versions(std::string_view log);

}  // namespace xtk
