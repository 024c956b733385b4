// Experiment configs (TOML, documented in docs/experiments.md): who trains,
// what cross traffic steps through which loads, what is recorded, and where it
// all runs. Errors name the file and line of the offending key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "transport/device_flags.hpp"

namespace xtk {

enum class Configuration { A, B };  // A: egress bottleneck at a training NIC; B: ingress at its switch port
enum class ExecutorKind { netns, slurm, hosts };

// How a faster cluster is emulated on a slower testbed (docs/experiments.md,
// "Emulating a faster cluster"). With a ratio r = testbed link / emulated link:
// `bytes` multiplies gradients, bucket caps and flow sizes by r and keeps every
// time; `time` multiplies compute times, burst widths and periods and the
// cross-traffic warm-up by 1/r and keeps every byte (arrival gaps follow from
// the load on the real link); `both` does each by the square root of r.
enum class EmulationMethod { bytes, time, both };

struct Emulation {
  double link_bps = 0;  // the emulated cluster's link; 0: no emulation
  EmulationMethod method = EmulationMethod::both;
  bool on() const { return link_bps > 0; }
  // Multiplies every byte the job and the cross traffic send (1 when off or `time`).
  double byte_scale(double testbed_link_bps) const;
  // Multiplies every time the experiment sets (1 when off or `bytes`).
  double time_scale(double testbed_link_bps) const;
};
std::string_view emulation_method_name(EmulationMethod method);

struct ExperimentConfig {
  std::string path;  // the config file, for messages
  // What the reader left out, one line each with the file and line (keys of
  // the netns testbed under another executor from --executor): say them.
  std::vector<std::string> notes;
  std::string name = "experiment";
  std::string out;  // the experiment directory (default runs/<name>)
  ExecutorKind executor = ExecutorKind::netns;
  Configuration configuration = Configuration::B;
  double link_bps = 1e9;  // capacity of the bottleneck link
  // netns: every other host NIC shaped to link_bps too, as on a switch whose
  // ports all run at one rate; false leaves them unshaped (veth: no limit).
  bool shape_host_nics = true;
  // netns: the bottleneck's buffer in bytes of the emulated cluster (scaled as
  // flow sizes are on the testbed); 0: the qdisc's own queue (1,000 packets).
  std::uint64_t bottleneck_buffer_bytes = 0;
  // The buffer on the testbed: a buffer holds bytes, so it scales as the
  // flows it queues do (emulation's byte scale).
  std::uint64_t testbed_buffer_bytes() const;
  // netns: every host's default TCP congestion control (the training job's
  // and the cross traffic's sockets); empty: this machine's default.
  std::string congestion_control;
  // netns: TCP's least retransmission timeout on the emulated cluster (0:
  // Linux's 200 ms). It also decides when an idle connection restarts from its
  // initial window, so the testbed's routes get it times the emulation's time
  // scale, as every other time (docs/experiments.md).
  std::int64_t tcp_rto_min_ns = 0;
  // The testbed's rto_min in ms; 0 leaves the kernel's (no emulated time and
  // no tcp_rto_min given).
  std::uint32_t testbed_rto_min_ms() const;
  Emulation emulation;
  std::uint64_t seed = 1;
  std::uint32_t repetitions = 1;

  struct Training {
    std::string backend = "gloo";
    std::vector<std::string> models{"resnet50"};
    std::uint32_t ranks = 3;
    double compute_scale = 1.0;
    std::string compute_mode = "sleep";
    std::uint32_t gloo_connections = 1;  // xtk-collective --gloo-connections
    std::uint32_t iterations = 10;
    std::uint32_t warmup = 1;
    std::string bucket;  // empty: the harness's default
    std::int64_t timeout_ns = 120'000'000'000;
    // The GPU of each local rank (netns: rank K is local rank K; elsewhere one
    // rank per host, local rank 0). Empty: local rank K uses GPU K.
    std::vector<std::uint32_t> gpus;
    // A training script run per rank (through /bin/sh -c) in place of the
    // emulator; it writes the iterations file (docs/experiments.md).
    std::string command;
    // A recorded PyTorch job replayed in place of the emulator
    // (docs/replay.md): its execution and Kineto traces, {rank} per rank.
    std::string replay, kineto;
    std::vector<std::pair<std::string, std::string>> env;  // [training.env], given to every rank last
    // From launching the ranks to the common start; 0: by mode (commands.hpp).
    std::int64_t startup_ns = 0;
  } training;

  struct CrossTraffic {
    std::vector<std::string> profiles{"consistent", "burst"};
    std::string cdf = "web-search";
    std::vector<double> loads{0.0, 0.3, 0.6, 0.9};  // shares of link_bps
    std::int64_t warmup_ns = 1'000'000'000;         // cross traffic runs alone this long first
    std::uint32_t long_lived_flows = 4;
    std::string burst_width = "1ms", burst_period;
    double burst_height = 3.0;
    std::string transport = "tcp";  // how the flows move: tcp or rdma (docs/rdma.md)
    DeviceFlags rdma;               // with rdma: device, port, GID index, class, messages
  } cross_traffic;

  struct Capture {
    std::string counter_period = "1ms";  // empty: no counters
    bool summarize = false;              // per-flow trace bins at the bottleneck
    std::string bin = "1ms";
  } capture;

  struct Slurm {
    std::vector<std::string> nodes;  // empty: the allocation's nodes
  } slurm;

  struct Hosts {
    std::string file;        // "name address [interface]" per line
    std::string ssh_config;  // given to ssh as -F: keys, ports, users, known hosts; empty: ssh's own
  } hosts;

  std::int64_t step_timeout_ns = 600'000'000'000;
};

// `executor`, when given, stands for the config's (xtk-run --executor) before
// the config is checked: keys only the netns testbed takes are then refused
// for another executor as they would be in the file.
ExperimentConfig load_experiment_config(const std::string& path, std::optional<ExecutorKind> executor = std::nullopt);
// Where the config at `path` differs from the `earlier` one in what a step
// measures, one "[table] key was X, is Y" each; empty when nowhere. Keys that
// only choose which steps run (loads, profiles, models, repetitions) or bound
// their time are left out: xtk-run checks each kept step's own plan.
std::vector<std::string> config_changes(const std::string& earlier, const std::string& path);
ExecutorKind parse_executor(const std::string& name);  // throws UsageError
std::string_view executor_name(ExecutorKind kind);
ExperimentConfig parse_experiment_config(const std::string& text, const std::string& source,
                                         std::optional<ExecutorKind> executor = std::nullopt);

}  // namespace xtk
