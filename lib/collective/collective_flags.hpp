// xtk-collective's command line, defined once: the flags before the
// subcommand (the job and its backend) and those of `train`, their
// registration with CLI11 (the tool parses with it), their conversion into
// TrainOptions, and the argv a launcher (xtk-run) renders from them.
// tests/unit/command_lines_test.cpp round-trips flags -> argv -> flags.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collective/backend.hpp"
#include "collective/replay.hpp"
#include "collective/train.hpp"
#include "collective/world.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace xtk::collective {

// --gloo-connections' bound: a connection per pair and a thread per part are cheap up to here.
inline constexpr std::uint32_t kMaxGlooConnections = 64;

struct JobFlags {
  std::string backend = "auto";
  std::uint32_t gpus = 1;
  std::optional<std::uint32_t> rank, world_size, local_rank;
  std::string master;
  std::optional<std::uint16_t> master_port;
  std::string timeout = "120s", gloo_algorithm = "ring", gloo_iface;
  std::uint32_t gloo_connections = 1;
  bool json = false;

  bool operator==(const JobFlags&) const = default;
};

struct TrainFlags {
  std::string model, bucket = "25M", first_bucket = "1M", compute;
  std::optional<double> forward_fraction;
  double compute_scale = 1.0, size_scale = 1.0;
  std::string compute_mode = "sleep";
  std::uint64_t iterations = 0, warmup = 1;
  std::string duration, start_at, iterations_path = "iterations-{rank}.csv",
                                  collectives_path = "collectives-{rank}.csv";
  bool no_check = false;

  bool operator==(const TrainFlags&) const = default;
};

struct ReplayFlags {
  std::string trace = "et-rank{rank}.json", kineto;
  double compute_scale = 1.0, size_scale = 1.0;
  std::string compute_mode = "sleep";
  std::uint64_t iterations = 20, warmup = 2;
  std::string start_at, iterations_path = "iterations-{rank}.csv", collectives_path = "collectives-{rank}.csv";

  bool operator==(const ReplayFlags&) const = default;
};

// On the tool itself (before the subcommand).
void add_flags(CLI::App& app, JobFlags& flags);
// On the `train` subcommand.
void add_flags(CLI::App& train, TrainFlags& flags);
// "... train ...": the arguments after `xtk-collective`.
std::vector<std::string> to_arguments(const JobFlags& job, const TrainFlags& train);
// On the `replay` subcommand, and "... replay ...".
void add_flags(CLI::App& replay, ReplayFlags& flags);
std::vector<std::string> to_arguments(const JobFlags& job, const ReplayFlags& replay);

// Throw UsageError naming the flag.
WorldFlags to_world_flags(const JobFlags& flags);
// The backend's name as given ("auto" is resolved by the tool).
BackendOptions to_backend_options(const JobFlags& job, const std::string& compute_mode);
std::int64_t to_timeout_ns(const JobFlags& flags);
TrainOptions to_options(const TrainFlags& flags);
ReplayOptions to_options(const ReplayFlags& flags);

}  // namespace xtk::collective
