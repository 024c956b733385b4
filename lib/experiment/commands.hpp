// Every command line xtk-run launches: the cross-traffic schedule (xtk-gen),
// server and client, the samplers and captures (xtk-log), each training rank
// (xtk-collective train, or the user's own training script) with the
// experiment's emulation applied (config.hpp, Emulation), and the tables
// (xtk-analyze). Kept apart from the step's supervision so tests run exactly
// what a step would, each with its own tool.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiment/config.hpp"
#include "experiment/plan.hpp"

namespace xtk {

// The port the cross traffic goes to: the captures split the traffic by it.
inline constexpr std::uint16_t kCrossTrafficPort = 7000;

// xtk-server receiving the cross traffic on `port`, over the config's transport.
std::vector<std::string> server_command(const ExperimentConfig& config, std::uint16_t port);

// xtk-client replaying `schedule` to the host labelled `dst` at `address`:`port`
// from the common start, its records to `records`, its summary as JSON on stdout.
std::vector<std::string> client_command(const ExperimentConfig& config, const std::string& schedule,
                                        const std::string& dst, const std::string& address, std::uint16_t port,
                                        const std::string& records, std::int64_t start_realtime_ns);

// xtk-log counters sampling `sources` (xtk-log's --source: net:eth0, snmp=Tcp:RetransSegs, ...)
// every `period` into `out`.
std::vector<std::string> counters_command(const std::vector<std::string>& sources, const std::string& period,
                                          const std::string& out);

// xtk-log capture --summarize of the packets on `interface` that match `filter`, binned into `out`.
std::vector<std::string> capture_command(const std::string& interface, const std::string& bin,
                                         const std::string& filter, const std::string& out);

// xtk-analyze's tables of experiment `dir`, as CSV under `csv_dir`.
std::vector<std::string> tables_command(const std::string& dir, const std::string& csv_dir);
// xtk-analyze's congestion point over the repetitions `runs`, as CSV under `csv_dir`.
std::vector<std::string> spread_command(const std::vector<std::string>& runs, const std::string& csv_dir);

// xtk-gen writing the step's schedule from `src` to `dst` into `out`, long
// enough for any step (the client is stopped when training ends).
std::vector<std::string> schedule_command(const ExperimentConfig& config, const StepPlan& step, const std::string& src,
                                          const std::string& dst, const std::string& out);

struct RankLaunch {
  std::uint32_t rank = 0;
  std::string master;                  // rank 0's HOST:PORT
  std::int64_t start_realtime_ns = 0;  // the common start of recorded iterations; 0: none
  std::string iterations_path;         // may hold {rank}
  std::string collectives_path;        // may hold {rank}
  std::uint32_t local_rank = 0;        // the rank's place on its host: picks its GPU
  // The testbed's NIC, when ranks share a host that also has faster paths
  // (NVLink, shared memory): NCCL is then confined to it. Empty: NCCL as the
  // user's environment sets it.
  std::string confine_to_interface;
  // The testbed host the rank stands for, when ranks share a machine: NCCL
  // takes it as the rank's host (NCCL_HOSTID), so each namespace is its own
  // node, as on the cluster, and ranks may share a GPU (gpus = [0, 0]).
  std::string host_id;
};

// A rank's environment, as NAME=value: torchrun's variables (RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT), its GPU, NCCL's settings (below),
// XTK_* for a training script, and [training.env] last (it overrides).
// With NCCL: NCCL_NVLS_ENABLE=0 and NCCL_DEBUG=INFO always (the step checks
// NCCL's report of its connections); with `confine_to_interface`, also
// NCCL_SOCKET_IFNAME and P2P, SHM and IB off (Gloo: GLOO_SOCKET_IFNAME).
std::vector<std::string> rank_environment(const ExperimentConfig& config, const StepPlan& step,
                                          const RankLaunch& launch);

// `env <rank_environment> ...`: xtk-collective train, or /bin/sh -c COMMAND.
std::vector<std::string> training_command(const ExperimentConfig& config, const StepPlan& step,
                                          const RankLaunch& launch);

// Checks, before any step runs, what the tools of `step` would refuse of the
// config (a bad burst, a CDF that is not there, a counter period below the
// sampler's least, a model without a profile), with the tools' own readers:
// throws InputError naming the config, the step and the tool's message.
void check_step_commands(const ExperimentConfig& config, const StepPlan& step);

// From launching the roles to the common start: `startup`, or by mode:
// process start-up (3 s), with CUDA and NCCL initialisation (10 s), or a
// training script importing its framework (30 s).
std::int64_t training_startup_ns(const ExperimentConfig& config);

// How long cross traffic runs alone before training starts.
std::int64_t cross_traffic_warmup_ns(const ExperimentConfig& config);

// A bound on the training's warm-up iterations without cross traffic: twice
// their compute (dilated under emulation). The step's roles start after it,
// so the warm-up neither meets the cross traffic nor outlasts --start-at.
std::int64_t training_warmup_ns(const ExperimentConfig& config, const StepPlan& step);

// A time as the tools take it: "1.500s" (durations) or Unix seconds (instants).
std::string seconds_text(std::int64_t ns);
std::string instant_text(std::int64_t realtime_ns);

}  // namespace xtk
