// Where an experiment's roles run. Every executor offers hosts 0..n-1, tells
// how the others reach each one, and starts a command on it as a child
// process of xtk-run, so stopping the run stops every role.
//
//   netns  the single-host testbed (lib/testbed): hK with the bottleneck shaped by tc
//   slurm  inside an allocation: one `srun` per role, pinned to its node
//   hosts  a hosts file of standalone machines, reached with ssh (same paths everywhere)
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/process.hpp"
#include "experiment/config.hpp"

namespace xtk {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::size_t host_count() const = 0;
  virtual std::string host_label(std::size_t host) const = 0;  // for logs and run.json
  virtual std::string address(std::size_t host) const = 0;     // how the other hosts reach it
  virtual std::string interface(std::size_t host) const = 0;   // its data NIC, for counters and capture
  virtual std::unique_ptr<ChildProcess> start(std::size_t host, const std::vector<std::string>& argv,
                                              const std::string& log_path) = 0;
  // This host's CLOCK_REALTIME minus ours, measured once (0 on one machine).
  virtual std::int64_t clock_offset_ns(std::size_t /*host*/) const { return 0; }
  // How long a role may take from start() to running on its host, beyond a
  // local process's start: added to every step's start-up time.
  virtual std::int64_t start_latency_ns() const { return 0; }
  // Whether every host is one machine (the netns testbed): its ranks then
  // share its GPUs and its fast paths between them (NVLink, shared memory).
  virtual bool one_machine() const { return false; }
  // TCP payload per byte the bottleneck link and its counters count, where
  // known (the netns testbed); unset elsewhere: NICs and line rates differ in
  // what they count (preamble, FCS), so analysis compares bytes as counted.
  virtual std::optional<double> payload_share() const { return std::nullopt; }
  virtual nlohmann::json describe() const = 0;
};

// The hosts an experiment needs: the training ranks, then one cross-traffic host.
std::unique_ptr<Executor> make_executor(const ExperimentConfig& config, std::size_t hosts);

// The command line the hosts executor has ssh run: a POSIX sh wrapper that
// becomes argv (exec, so its PID is argv's) after starting a reader of its
// stdin, which passes each signal name read there ("INT") to argv, and
// SIGTERM at end of file: xtk-run stopped, died or lost the connection.
std::string forward_signals_command(const std::vector<std::string>& argv);

}  // namespace xtk
