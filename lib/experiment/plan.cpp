#include "experiment/plan.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "analysis/run_dir.hpp"
#include "collective/profile.hpp"
#include "core/error.hpp"

namespace xtk {

std::vector<StepPlan> plan_steps(const ExperimentConfig& config, const std::string& experiment_dir) {
  std::vector<StepPlan> steps;
  // Every step, in every repetition, draws its own schedule: a repetition
  // samples the cross traffic anew rather than replaying the same flows.
  // Step k's seed is the config's + k, in a block of its own per config seed:
  // with seed + k alone, seed 2's step k would replay seed 1's step k + 1
  // (xtk-gen draws the same flows at another load, scaled to it), so runs
  // "with other seeds" would share their draws. Seed 1 keeps 1 + k.
  std::uint64_t seed = config.seed + (config.seed - 1) * kSeedBlock;
  const std::string executor(executor_name(config.executor));
  std::vector<std::string> names;  // the models' names, as the step directories use them
  for (const auto& model : config.training.models) {
    try {
      names.push_back(read_model_totals(model).name);
    } catch (const UsageError& e) {  // the profile's finder speaks of xtk-collective's --model
      std::string_view why = e.what();
      if (why.starts_with("--model ")) why.remove_prefix(8);
      throw InputError(config.path, 0, fmt::format("[training] model {}", why));
    }
  }
  for (std::uint32_t rep = 1; rep <= config.repetitions; ++rep) {
    const std::string dir = repetition_dir(config, experiment_dir, rep);
    for (std::size_t m = 0; m < names.size(); ++m) {
      const std::string& model = config.training.models[m];
      // One zero-load baseline per model opens every profile's series.
      steps.push_back({model, "none", 0, 0.0, fmt::format("{}/{}/none/step00", dir, names[m]), seed++, rep, executor});
      for (const auto& profile : config.cross_traffic.profiles) {
        std::uint32_t index = 0;
        for (double load : config.cross_traffic.loads) {
          if (load <= 0) continue;  // the baseline already covers it
          ++index;
          steps.push_back({model, profile, index, load,
                           fmt::format("{}/{}/{}/step{:02}", dir, names[m], profile, index), seed++, rep, executor});
        }
      }
    }
  }
  return steps;
}

std::optional<std::string> rerun_reason(const StepPlan& step) {
  if (!std::filesystem::exists(std::filesystem::path(step.dir) / "run.json")) return "";
  analysis::StepInfo record;
  try {
    record = analysis::read_step_info(step.dir);  // analysis' own reader: a record it refuses is no result
  } catch (const Error& e) {
    return fmt::format("analysis cannot read its record: {}", e.what());
  }
  if (record.failed) return "";
  // Records of older builds lack a key: what they hold is taken as planned.
  const auto& plan = record.plan;
  const std::string model = plan.model_profile.empty() ? step.model : plan.model_profile;
  const double load = plan.load_share.value_or(step.load_share);
  const std::uint64_t seed = step.profile == "none" ? step.seed : plan.seed.value_or(step.seed);
  if (model != step.model || record.profile != step.profile || std::abs(load - step.load_share) > 1e-9) {
    return fmt::format("its record is of {} {} at {:g} % of the link, this plan's of {} {} at {:g} %", model,
                       record.profile, load * 100, step.model, step.profile, step.load_share * 100);
  }
  if (seed != step.seed) return fmt::format("its schedule drew seed {}, this plan's draws {}", seed, step.seed);
  // Another executor is another testbed (`xtk-run --executor` overrides the config's).
  const std::string executor = plan.executor.empty() ? step.executor : plan.executor;
  if (executor != step.executor)
    return fmt::format("it ran on executor {}, this plan's runs on {}", executor, step.executor);
  return std::nullopt;
}

std::string repetition_dir(const ExperimentConfig& config, const std::string& experiment_dir, std::uint32_t rep) {
  return config.repetitions == 1 ? experiment_dir : analysis::repetition_dir(experiment_dir, rep);
}

ModelTotals read_model_totals(const std::string& model) {
  const auto profile = collective::read_profile(collective::find_profile(model));
  ModelTotals totals;
  totals.name = profile.model;
  totals.params = static_cast<double>(profile.parameters());
  totals.bytes_per_param = static_cast<double>(profile.bytes()) / totals.params;
  totals.compute_ms = profile.compute_ms.value_or(0);
  return totals;
}

std::string find_tool(const std::string& name) {
  namespace fs = std::filesystem;
  if (const char* dir = std::getenv("XTK_BIN_DIR")) {
    const fs::path p = fs::path(dir) / name;
    if (fs::exists(p)) return p.string();
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& p : {self.parent_path() / name, self.parent_path().parent_path() / name / name}) {
      if (fs::exists(p)) return p.string();
    }
  }
  if (const char* path = std::getenv("PATH")) {
    std::string list(path);
    for (std::size_t start = 0; start <= list.size();) {
      const auto end = std::min(list.find(':', start), list.size());
      const fs::path p = fs::path(list.substr(start, end - start)) / name;
      if (!p.empty() && ::access(p.c_str(), X_OK) == 0) return p.string();
      start = end + 1;
    }
  }
  throw Error(fmt::format("cannot find the tool '{}': build xtk (scripts/build.sh) or set XTK_BIN_DIR", name));
}

}  // namespace xtk
