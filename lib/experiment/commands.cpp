#include "experiment/commands.hpp"

#include <fmt/format.h>

#include <cmath>

#include "analysis/tables_flags.hpp"
#include "capture/log_flags.hpp"
#include "collective/collective_flags.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "flow/client_flags.hpp"
#include "flow/server_flags.hpp"
#include "workload/gen_flags.hpp"
#include "workload/generator.hpp"

namespace xtk {
namespace {

double byte_scale(const ExperimentConfig& c) { return c.emulation.byte_scale(c.link_bps); }
double time_scale(const ExperimentConfig& c) { return c.emulation.time_scale(c.link_bps); }

// A configured duration, dilated under `emulation = "time"`.
std::string dilated(const ExperimentConfig& c, const std::string& duration) {
  return fmt::format("{}ns", std::llround(static_cast<double>(parse_duration_ns(duration)) * time_scale(c)));
}

std::vector<std::string> tool_command(const std::string& tool, std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), find_tool(tool));
  return arguments;
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

std::vector<std::string> server_command(const ExperimentConfig& c, std::uint16_t port) {
  ServerFlags f;
  f.transport = c.cross_traffic.transport;
  if (f.transport != "tcp") f.device = c.cross_traffic.rdma;
  f.listen = {fmt::format("[::]:{}", port)};
  f.quiet = true;
  return tool_command("xtk-server", to_arguments(f));
}

std::vector<std::string> client_command(const ExperimentConfig& c, const std::string& schedule, const std::string& dst,
                                        const std::string& address, std::uint16_t port, const std::string& records,
                                        std::int64_t start_realtime_ns) {
  ClientFlags f;
  f.transport = c.cross_traffic.transport;
  if (f.transport != "tcp") f.device = c.cross_traffic.rdma;
  f.schedule = schedule;
  f.map = {fmt::format("{}={}", dst, address)};
  f.port = port;
  f.records = records;
  f.start_at = instant_text(start_realtime_ns);
  f.json = true;
  f.grace = "1s";
  f.no_progress = true;
  if (c.executor == ExecutorKind::netns) {
    // Every host of the netns testbed shares this machine's CPUs with the
    // training ranks: a SCHED_FIFO client would take them from the ranks, and
    // a PM QoS request would change the ranks' wake-ups too.
    f.realtime = false;
    f.wake_latency = "none";
  }
  return tool_command("xtk-client", to_arguments(f));
}

namespace {

capture::CounterFlags counters_flags(const std::vector<std::string>& sources, const std::string& period,
                                     const std::string& out) {
  capture::CounterFlags f;
  f.sources = sources;
  f.period = period;
  f.out = out;
  return f;
}

capture::CaptureFlags capture_flags(const std::string& interface, const std::string& bin, const std::string& filter,
                                    const std::string& out) {
  capture::CaptureFlags f;
  f.interfaces = {interface};
  f.summarize = true;
  f.bin = bin;
  f.filter = filter;
  f.out = out;
  return f;
}

}  // namespace

std::vector<std::string> counters_command(const std::vector<std::string>& sources, const std::string& period,
                                          const std::string& out) {
  return tool_command("xtk-log", to_arguments(counters_flags(sources, period, out)));
}

std::vector<std::string> capture_command(const std::string& interface, const std::string& bin,
                                         const std::string& filter, const std::string& out) {
  return tool_command("xtk-log", to_arguments(capture_flags(interface, bin, filter, out)));
}

std::vector<std::string> tables_command(const std::string& dir, const std::string& csv_dir) {
  analysis::TablesFlags f;
  f.dir = dir;
  f.out.dir = csv_dir;
  return tool_command("xtk-analyze", to_arguments(f));
}

std::vector<std::string> spread_command(const std::vector<std::string>& runs, const std::string& csv_dir) {
  analysis::SpreadFlags f;
  f.dirs = runs;
  f.out.dir = csv_dir;
  return tool_command("xtk-analyze", to_arguments(f));
}

namespace {

GenFlags schedule_flags(const ExperimentConfig& c, const StepPlan& step, const std::string& src, const std::string& dst,
                        const std::string& out) {
  GenFlags f;
  f.profile = step.profile;
  f.cdf = c.cross_traffic.cdf;
  f.link = fmt::format("{:.0f}", c.link_bps);
  f.load = fmt::format("{}", step.load_share);
  f.duration = seconds_text(c.step_timeout_ns);
  f.seed = step.seed;
  f.src = src;
  f.dst = dst;
  f.out = out;
  if (step.profile == "long-lived") {
    // Capped flows: their share of the link is the load whatever the bytes.
    f.flows = c.cross_traffic.long_lived_flows;
  } else {
    f.size_scale = byte_scale(c);
  }
  if (step.profile == "burst") {
    f.burst_width = dilated(c, c.cross_traffic.burst_width);
    f.burst_height = c.cross_traffic.burst_height;
    if (!c.cross_traffic.burst_period.empty()) f.burst_period = dilated(c, c.cross_traffic.burst_period);
  }
  return f;
}

}  // namespace

std::vector<std::string> schedule_command(const ExperimentConfig& c, const StepPlan& step, const std::string& src,
                                          const std::string& dst, const std::string& out) {
  return tool_command("xtk-gen", to_arguments(schedule_flags(c, step, src, dst, out)));
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
    if (!launch.host_id.empty()) env.push_back("NCCL_HOSTID=" + launch.host_id);
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

namespace {

// What xtk-collective train and replay take alike: iterations, scaling, files, start.
template <typename Flags>
Flags iteration_flags(const ExperimentConfig& c, const RankLaunch& launch) {
  Flags f;
  f.iterations = c.training.iterations;
  f.warmup = c.training.warmup;
  f.compute_scale = c.training.compute_scale * time_scale(c);
  f.size_scale = byte_scale(c);
  f.iterations_path = launch.iterations_path;
  f.collectives_path = launch.collectives_path;
  // GPU ranks compute on their GPU; the CPU modes are for Gloo ranks.
  if (c.training.backend == "gloo") f.compute_mode = c.training.compute_mode;
  if (launch.start_realtime_ns > 0) f.start_at = instant_text(launch.start_realtime_ns);
  return f;
}

// xtk-collective train's flags for a rank (without a `command` or `replay`).
collective::TrainFlags train_flags(const ExperimentConfig& c, const StepPlan& step, const RankLaunch& launch) {
  auto train = iteration_flags<collective::TrainFlags>(c, launch);
  train.model = step.model;
  if (!c.training.bucket.empty()) train.bucket = c.training.bucket;
  return train;
}

}  // namespace

std::vector<std::string> training_command(const ExperimentConfig& c, const StepPlan& step, const RankLaunch& launch) {
  std::vector<std::string> argv{"env"};
  const auto env = rank_environment(c, step, launch);
  argv.insert(argv.end(), env.begin(), env.end());
  if (!c.training.command.empty()) {
    argv.insert(argv.end(), {"/bin/sh", "-c", c.training.command});
    return argv;
  }
  collective::JobFlags job;
  job.backend = c.training.backend;
  job.timeout = seconds_text(c.training.timeout_ns);
  job.gloo_connections = c.training.gloo_connections;
  if (!c.training.replay.empty()) {
    auto replay = iteration_flags<collective::ReplayFlags>(c, launch);
    replay.trace = c.training.replay;
    replay.kineto = c.training.kineto;
    const auto tool = tool_command("xtk-collective", to_arguments(job, replay));
    argv.insert(argv.end(), tool.begin(), tool.end());
    return argv;
  }
  const auto train = train_flags(c, step, launch);
  const auto tool = tool_command("xtk-collective", to_arguments(job, train));
  argv.insert(argv.end(), tool.begin(), tool.end());
  return argv;
}

void check_step_commands(const ExperimentConfig& c, const StepPlan& step) {
  const auto refused = [&](std::string_view tool, const std::string& why) {
    return InputError(c.path, 0,
                      fmt::format("{}'s {} step at {:.0f} %: {} would refuse it: {}", step.model, step.profile,
                                  step.load_share * 100, tool, why));
  };
  try {
    if (step.profile != "none") ScheduleGenerator generator(to_config(schedule_flags(c, step, "h1", "h0", "-")));
    if (!c.capture.counter_period.empty()) {
      capture::to_options(counters_flags({"net:eth0"}, c.capture.counter_period, "-"));
    }
    if (c.capture.summarize) capture::to_options(capture_flags("eth0", c.capture.bin, "", "-"));
  } catch (const Error& e) {
    throw refused(step.profile != "none" ? "xtk-gen or xtk-log" : "xtk-log", e.what());
  }
  if (!c.training.command.empty() || !c.training.replay.empty()) return;
  try {
    collective::to_options(train_flags(c, step, RankLaunch{}));
    read_model_totals(step.model);
  } catch (const Error& e) {
    throw refused("xtk-collective train", e.what());
  }
}

}  // namespace xtk
