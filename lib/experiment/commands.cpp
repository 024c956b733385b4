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

std::int64_t cross_traffic_warmup_ns(const ExperimentConfig& config) {
  return std::llround(static_cast<double>(config.cross_traffic.warmup_ns) * time_scale(config));
}

std::int64_t training_warmup_ns(const ExperimentConfig& c, const StepPlan& step) {
  const double compute_ns = read_model_totals(step.model).compute_ms * 1e6 * c.training.compute_scale * time_scale(c);
  return std::llround(2 * compute_ns * static_cast<double>(c.training.warmup));
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

std::vector<std::string> training_command(const ExperimentConfig& c, const StepPlan& step, const RankLaunch& launch) {
  std::vector<std::string> argv{find_tool("xtk-collective"),
                                "--backend",
                                c.training.backend,
                                "--rank",
                                std::to_string(launch.rank),
                                "--world-size",
                                std::to_string(c.training.ranks),
                                "--master",
                                launch.master,
                                "--timeout",
                                seconds_text(c.training.timeout_ns),
                                "train",
                                "--model",
                                step.model,
                                "--iters",
                                std::to_string(c.training.iterations),
                                "--warmup",
                                std::to_string(c.training.warmup),
                                "--compute-scale",
                                fmt::format("{}", c.training.compute_scale * time_scale(c)),
                                "--size-scale",
                                fmt::format("{}", byte_scale(c)),
                                "--compute-mode",
                                c.training.compute_mode,
                                "-o",
                                launch.iterations_path};
  if (launch.start_realtime_ns > 0) argv.insert(argv.end(), {"--start-at", instant_text(launch.start_realtime_ns)});
  if (!c.training.bucket.empty()) argv.insert(argv.end(), {"--bucket", c.training.bucket});
  return argv;
}

}  // namespace xtk
