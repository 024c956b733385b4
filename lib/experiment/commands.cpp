#include "experiment/commands.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/units.hpp"

namespace xtk {
namespace {

double byte_scale(const ExperimentConfig& c) { return c.emulation.byte_scale(c.link_bps); }
double time_scale(const ExperimentConfig& c) { return c.emulation.time_scale(c.link_bps); }

// A configured duration, dilated under `emulation = "time"`.
std::string dilated(const ExperimentConfig& c, const std::string& duration) {
  return fmt::format("{}ns", std::llround(static_cast<double>(parse_duration_ns(duration)) * time_scale(c)));
}

}  // namespace

std::string seconds_text(std::int64_t ns) { return fmt::format("{:.3f}s", static_cast<double>(ns) / 1e9); }

std::string instant_text(std::int64_t realtime_ns) {
  return fmt::format("{:.6f}", static_cast<double>(realtime_ns) / 1e9);
}

std::int64_t training_startup_ns(const ExperimentConfig& c) {
  if (c.training.startup_ns > 0) return c.training.startup_ns;
  if (!c.training.command.empty()) return 30'000'000'000;
  return c.training.backend == "nccl" ? 10'000'000'000 : 3'000'000'000;
}

std::int64_t cross_traffic_warmup_ns(const ExperimentConfig& config) {
  return std::llround(static_cast<double>(config.cross_traffic.warmup_ns) * time_scale(config));
}

std::int64_t training_warmup_ns(const ExperimentConfig& c, const StepPlan& step) {
  const double compute_ns = read_model_totals(step.model).compute_ms * 1e6 * c.training.compute_scale * time_scale(c);
  return std::llround(2 * compute_ns * static_cast<double>(c.training.warmup));
}

std::vector<std::string> server_command(std::uint16_t port) {
  return {find_tool("xtk-server"), "--listen", fmt::format("[::]:{}", port), "--quiet"};
}

std::vector<std::string> client_command(const std::string& schedule, const std::string& dst, const std::string& address,
                                        std::uint16_t port, const std::string& records,
                                        std::int64_t start_realtime_ns) {
  return {find_tool("xtk-client"),
          schedule,
          "--map",
          fmt::format("{}={}", dst, address),
          "--port",
          std::to_string(port),
          "-o",
          records,
          "--start-at",
          instant_text(start_realtime_ns),
          "--json",
          "--grace",
          "1s",
          "--no-progress"};
}

std::vector<std::string> counters_command(const std::string& interface, const std::string& period,
                                          const std::string& out) {
  return {find_tool("xtk-log"), "counters", "-s", "net:" + interface, "--period", period, "-o", out};
}

std::vector<std::string> capture_command(const std::string& interface, const std::string& bin,
                                         const std::string& filter, const std::string& out) {
  return {find_tool("xtk-log"), "capture", "-i", interface, "--summarize", "--bin", bin, "-f", filter, "-o", out};
}

std::vector<std::string> tables_command(const std::string& dir, const std::string& csv_dir) {
  return {find_tool("xtk-analyze"), "tables", dir, "--csv", csv_dir};
}

std::vector<std::string> schedule_command(const ExperimentConfig& c, const StepPlan& step, const std::string& src,
                                          const std::string& dst, const std::string& out) {
  std::vector<std::string> argv{find_tool("xtk-gen"),
                                "--profile",
                                step.profile,
                                "--cdf",
                                c.cross_traffic.cdf,
                                "--link",
                                fmt::format("{:.0f}", c.link_bps),
                                "--load",
                                fmt::format("{}", step.load_share),
                                "--duration",
                                seconds_text(c.step_timeout_ns),
                                "--seed",
                                std::to_string(step.seed),
                                "--src",
                                src,
                                "--dst",
                                dst,
                                "-o",
                                out};
  if (step.profile == "long-lived") {
    // Capped flows: their share of the link is the load whatever the bytes.
    argv.insert(argv.end(), {"--flows", std::to_string(c.cross_traffic.long_lived_flows)});
    return argv;
  }
  argv.insert(argv.end(), {"--size-scale", fmt::format("{}", byte_scale(c))});
  if (step.profile == "burst") {
    argv.insert(argv.end(), {"--burst-width", dilated(c, c.cross_traffic.burst_width), "--burst-height",
                             c.cross_traffic.burst_height});
    if (!c.cross_traffic.burst_period.empty()) {
      argv.insert(argv.end(), {"--burst-period", dilated(c, c.cross_traffic.burst_period)});
    }
  }
  return argv;
}

namespace {

std::string with_rank(std::string path, std::uint32_t rank) {
  if (const auto at = path.find("{rank}"); at != std::string::npos) path.replace(at, 6, std::to_string(rank));
  return path;
}

}  // namespace

std::vector<std::string> rank_environment(const ExperimentConfig& c, const StepPlan& step, const RankLaunch& launch) {
  const auto colon = launch.master.rfind(':');
  std::vector<std::string> env{
      fmt::format("RANK={}", launch.rank),
      fmt::format("WORLD_SIZE={}", c.training.ranks),
      fmt::format("LOCAL_RANK={}", launch.local_rank),
      "MASTER_ADDR=" + launch.master.substr(0, colon),
      "MASTER_PORT=" + (colon == std::string::npos ? std::string("29500") : launch.master.substr(colon + 1)),
  };
  if (!c.training.gpus.empty()) {
    env.push_back(fmt::format("CUDA_VISIBLE_DEVICES={}", c.training.gpus[launch.local_rank % c.training.gpus.size()]));
  }
  if (c.training.backend == "nccl") {
    env.insert(env.end(), {"NCCL_NVLS_ENABLE=0", "NCCL_DEBUG=INFO"});
    if (!launch.confine_to_interface.empty()) {
      env.insert(env.end(), {"NCCL_SOCKET_IFNAME=" + launch.confine_to_interface, "NCCL_P2P_DISABLE=1",
                             "NCCL_SHM_DISABLE=1", "NCCL_IB_DISABLE=1"});
    }
  } else if (!launch.confine_to_interface.empty()) {
    env.push_back("GLOO_SOCKET_IFNAME=" + launch.confine_to_interface);
  }
  if (!c.training.command.empty()) {
    env.insert(env.end(), {"XTK_ITERATIONS_FILE=" + with_rank(launch.iterations_path, launch.rank),
                           fmt::format("XTK_ITERATIONS={}", c.training.iterations),
                           fmt::format("XTK_WARMUP={}", c.training.warmup), "XTK_MODEL=" + step.model,
                           "XTK_BACKEND=" + c.training.backend});
    if (launch.start_realtime_ns > 0) env.push_back("XTK_START_AT=" + instant_text(launch.start_realtime_ns));
  }
  for (const auto& [name, value] : c.training.env) env.push_back(fmt::format("{}={}", name, value));
  return env;
}

std::vector<std::string> training_command(const ExperimentConfig& c, const StepPlan& step, const RankLaunch& launch) {
  std::vector<std::string> argv{"env"};
  const auto env = rank_environment(c, step, launch);
  argv.insert(argv.end(), env.begin(), env.end());
  if (!c.training.command.empty()) {
    argv.insert(argv.end(), {"/bin/sh", "-c", c.training.command});
    return argv;
  }
  argv.insert(argv.end(), {find_tool("xtk-collective"), "--backend", c.training.backend, "--timeout",
                           seconds_text(c.training.timeout_ns), "train", "--model", step.model, "--iters",
                           std::to_string(c.training.iterations), "--warmup", std::to_string(c.training.warmup),
                           "--compute-scale", fmt::format("{}", c.training.compute_scale * time_scale(c)),
                           "--size-scale", fmt::format("{}", byte_scale(c)), "-o", launch.iterations_path});
  // GPU ranks compute on their GPU; the CPU modes are for Gloo ranks.
  if (c.training.backend == "gloo") argv.insert(argv.end(), {"--compute-mode", c.training.compute_mode});
  if (launch.start_realtime_ns > 0) argv.insert(argv.end(), {"--start-at", instant_text(launch.start_realtime_ns)});
  if (!c.training.bucket.empty()) argv.insert(argv.end(), {"--bucket", c.training.bucket});
  return argv;
}

}  // namespace xtk
