// Experiment directories: one step directory per training run at one
// cross-traffic level, each described by its run.json (docs/run-directory.md).
//
//   {
//     "format_version": 1, "step": 3, "model": "resnet50", "ranks": 4,
//     "cross_traffic": {"profile": "burst", "load_bps": 10e9},
//     "link_bps": 25e9,
//     "bottleneck": {"host": "node1", "source": "net:eth0", "counter": "tx_bytes", "link_bps": 25e9},
//     "files": {"iterations": "iterations.csv", "counters": "counters.csv"}
//   }
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace xtk::analysis {

inline constexpr int kRunJsonFormatVersion = 1;
inline constexpr std::string_view kNoCrossTraffic = "none";  // profile of zero-load steps

struct Bottleneck {
  double link_bps = 0;  // capacity of the bottleneck link (defaults to link_bps)
  std::string host;     // training node whose link is the bottleneck; empty when not given
  std::string source;   // counter source that counts the cross traffic there ("net:eth0")
  std::string counter;  // counter name in that source ("tx_bytes")
  // Payload bytes per byte that link_bps and the counters count, for
  // full-size segments: 1 when not given (bytes compared as counted).
  double payload_share = 1;
};

// A faster cluster emulated on the testbed (xtk-run's emulate_link): the
// step's bytes were multiplied by byte_scale and its times by time_scale.
// Tables show loads and bandwidths both as measured and in the emulated
// cluster's units (x link_bps / the testbed's link).
struct Emulation {
  double link_bps = 0;  // 0: none
  std::string method;   // "bytes" or "time"
  double byte_scale = 1, time_scale = 1;
  bool operator==(const Emulation&) const = default;
};

// TCP counters of the training NIC's host, beside its byte counter in the same
// file (xtk-log's snmp source): table 1's retransmissions and timeouts.
inline constexpr std::string_view kTcpCounterSource = "snmp";
inline constexpr std::string_view kTcpRetransmits = "Tcp:RetransSegs";
inline constexpr std::string_view kTcpTimeouts = "TcpExt:TCPTimeouts";

// A NIC that carries only the training ring (xtk-run samples the last rank's):
// its counter gives the training's bytes on the wire, headers included.
struct TrainingNic {
  std::string host;
  std::string source;   // "net:eth0"
  std::string counter;  // "tx_bytes"
};

// What xtk-run planned for the step, beside what it measured: resuming, it
// keeps a step only when these match its plan. Other writers may leave them out.
struct StepPlanRecord {
  std::string model_profile;          // the configs/models profile the plan named ("": not recorded)
  std::optional<double> load_share;   // cross_traffic.load_share: the load as a share of the link
  std::optional<std::uint64_t> seed;  // cross_traffic.seed: its schedule's (xtk-gen --seed)
  std::string executor;               // executor.executor: the testbed's kind ("": not recorded)
};

struct StepInfo {
  std::string dir;       // the step directory
  std::string run_json;  // its run.json, for messages
  std::uint64_t step = 0;
  std::string model;
  std::optional<double> params, bytes_per_param;  // override configs/models/params.csv
  std::uint64_t ranks = 0;
  std::string profile;  // cross-traffic profile; "none" for zero load
  double load_bps = 0;  // requested cross-traffic load
  // CLOCK_REALTIME of the cross-traffic schedules' time zero (xtk-client's
  // start_realtime_ns): places flow records in the iterations' window.
  std::optional<std::int64_t> start_realtime_ns;
  double link_bps = 0;  // the training nodes' link rate
  Bottleneck bottleneck;
  Emulation emulation;
  // Paths of the step's files (joined to dir); empty when absent.
  std::vector<std::string> iterations, flows;
  std::vector<std::string> collectives;  // per-call arrivals (the straggler table)
  std::string counters;
  std::string training_counters;  // with training_nic
  TrainingNic training_nic;
  // Trace bins of the cross traffic and of the training traffic: the capture
  // tool's filters split a capture into the two (docs/run-directory.md).
  std::vector<std::string> cross_bins, training_bins;
  // "status": "failed" (xtk-run records a step whose role failed): the tables skip it.
  bool failed = false;
  std::string error;
  StepPlanRecord plan;
};

// Parses run.json text. `path` names it in errors ("path:line: ..."); file
// names are joined to `dir`, and with `check_files` each must exist.
StepInfo parse_run_json(std::string_view text, const std::string& path, const std::string& dir, bool check_files);

// The run.json object of `info` (its writer: xtk-run adds the keys analysis
// does not read); file paths under `info.dir` are written relative to it.
nlohmann::json run_json_object(const StepInfo& info);
StepInfo read_step_info(const std::string& dir);

// Every directory at or below `experiment_dir` that holds a run.json, sorted.
std::vector<std::string> find_step_dirs(const std::string& experiment_dir);

// An experiment of several repetitions (xtk-run's `repetitions`) holds one
// experiment directory per repetition: DIR/rep1, DIR/rep2, ...
std::string repetition_dir(const std::string& experiment_dir, std::uint32_t repetition);
// DIR/rep1, DIR/rep2, ... while they exist; empty when DIR has no rep1.
std::vector<std::string> repetition_dirs(const std::string& experiment_dir);

}  // namespace xtk::analysis
