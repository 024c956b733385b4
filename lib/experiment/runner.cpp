#include "experiment/runner.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/data_files.hpp"
#include "core/error.hpp"
#include "core/file_lock.hpp"
#include "core/process.hpp"
#include "core/provenance.hpp"
#include "experiment/commands.hpp"
#include "experiment/executor.hpp"
#include "experiment/plan.hpp"
#include "experiment/provenance.hpp"
#include "experiment/step.hpp"

namespace xtk {
namespace {

namespace fs = std::filesystem;

// Runs analysis/plot.py with `arguments`; says where the figures went, or why none came.
void plot(const std::vector<std::string>& arguments, const std::string& where, std::ostream& out) {
  // The source tree's analysis/, else share/xtk/analysis of a bundle or an installation.
  fs::path script = fs::path(XTK_ANALYSIS_DIR) / "plot.py";
  if (!fs::exists(script)) script = find_shipped_file("analysis/plot.py");
  if (script.empty()) return;
  // Debian's python3 has matplotlib; another one first on PATH may not.
  std::vector<std::string> argv{fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3", script.string()};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  const auto plots = run_command(argv, std::chrono::minutes(5));
  out << (plots.ok() ? fmt::format("# plots in {}\n", where)
                     : fmt::format("# plots failed (the tables are fine): {}\n", plots.output));
}

// The figures, beside the tables; the injection and per-flow plots show the
// heaviest burst step (or the heaviest step).
void draw_plots(const std::string& dir, const std::vector<StepPlan>& steps, std::ostream& out) {
  const StepPlan* heaviest = nullptr;
  for (const auto& s : steps) {
    if (s.profile == "none" || rerun_reason(s)) continue;
    if (heaviest == nullptr || (s.profile == "burst") > (heaviest->profile == "burst") ||
        ((s.profile == "burst") == (heaviest->profile == "burst") && s.load_share > heaviest->load_share)) {
      heaviest = &s;
    }
  }
  std::vector<std::string> arguments{"all", "--tables", dir + "/tables", "-o", dir + "/plots"};
  if (heaviest != nullptr) arguments.insert(arguments.end(), {"--step", heaviest->dir});
  plot(arguments, dir + "/plots", out);
}

}  // namespace

int run_experiment(const ExperimentConfig& config, const RunOptions& options, const std::atomic<bool>& interrupt,
                   std::ostream& out) {
  const std::string dir = options.out.empty() ? config.out : options.out;
  fs::create_directories(dir);
  // One xtk-run per experiment directory at a time.
  const FileLock lock((fs::path(dir) / ".xtk-run.lock").string(), FileLock::Wait::no,
                      fmt::format("{}: another xtk-run is using this experiment directory", dir));
  const std::vector<StepPlan> steps = plan_steps(config, dir);
  std::size_t kept = 0;
  if (!options.fresh) {
    for (const auto& s : steps) kept += rerun_reason(s) ? 0 : 1;
  }
  // Kept steps stand for the config only if it still asks what they measured.
  const fs::path earlier = fs::path(dir) / "experiment.toml";
  if (kept > 0 && fs::exists(earlier) && !fs::equivalent(earlier, config.path)) {
    if (const auto changes = config_changes(earlier.string(), config.path); !changes.empty()) {
      throw UsageError(fmt::format(
          "{}: its {} completed steps ran another config than {}: {}. Run with --fresh to run every step again, or "
          "give another --out",
          dir, kept, config.path, fmt::join(changes, "; ")));
    }
  }
  // What a step's tools would refuse fails every step alike: said once, before the first.
  for (const auto& s : steps) {
    if (options.fresh || rerun_reason(s)) check_step_commands(config, s);
  }
  if (!fs::exists(earlier) || !fs::equivalent(earlier, config.path)) {
    fs::copy_file(config.path, earlier, fs::copy_options::overwrite_existing);
  }
  out << fmt::format("# xtk-run {}: {} steps ({} kept from an earlier run) in {}\n", config.name, steps.size(), kept,
                     dir);
  int status = 0;
  const bool live = options.progress && isatty(STDERR_FILENO);
  if (kept < steps.size()) {
    auto executor = make_executor(config, config.training.ranks + 1);
    out << "# executor " << executor->describe().dump() << "\n";
    const nlohmann::json provenance = {{"xtk", tool_provenance()},
                                       {"hosts", describe_hosts(*executor, (fs::path(dir) / ".hosts").string())}};
    std::size_t number = 0;
    for (const auto& s : steps) {
      ++number;
      const std::string label = fmt::format("[{}/{}] {} {} {:.0f}% of {:.2f} Gbit/s", number, steps.size(),
                                            fs::path(s.dir).parent_path().parent_path().filename().string(), s.profile,
                                            s.load_share * 100, config.link_bps / 1e9);
      if (!options.fresh) {
        const auto why = rerun_reason(s);
        if (!why) {
          out << label << ": kept\n";
          continue;
        }
        if (!why->empty()) out << label << ": runs again: " << *why << "\n";
      }
      if (live) std::cerr << label << " ..." << std::flush;
      const auto outcome = run_step(config, *executor, s, provenance, interrupt);
      if (live) std::cerr << "\r" << std::string(label.size() + 4, ' ') << "\r";
      if (outcome.interrupted) {
        out << label << ": interrupted; its directory is incomplete and runs again on resume\n";
        out << fmt::format("# interrupted: run the same command again to resume ({} of {} steps done)\n", number - 1,
                           steps.size());
        return 130;
      }
      if (outcome.ok) {
        out << fmt::format("{}: ok ({:.1f} s)\n", label, outcome.seconds);
      } else {
        out << fmt::format("{}: FAILED ({:.1f} s): {}\n", label, outcome.seconds, outcome.error);
        status = 1;
      }
      out.flush();
    }
  }
  if (!options.analyze) return status;
  // Each repetition is an experiment of its own (its steps repeat the same
  // series): its tables and figures go under its directory.
  std::vector<std::string> rep_dirs;
  for (std::uint32_t rep = 1; rep <= config.repetitions; ++rep) {
    const std::string rep_dir = repetition_dir(config, dir, rep);
    rep_dirs.push_back(rep_dir);
    if (config.repetitions > 1) out << fmt::format("\n# repetition {}: {}", rep, rep_dir);
    const auto tables = run_command(tables_command(rep_dir, rep_dir + "/tables"), std::chrono::minutes(5));
    out << "\n" << tables.output;
    if (!tables.ok()) {
      out << fmt::format("# xtk-analyze tables {} failed: the step directories are intact; rerun it by hand\n",
                         rep_dir);
      status = 1;
      continue;
    }
    std::vector<StepPlan> rep_steps;
    for (const auto& s : steps) {
      if (s.repetition == rep) rep_steps.push_back(s);
    }
    draw_plots(rep_dir, rep_steps, out);
  }
  // What a paper reports of repetitions: each series' point over them all.
  if (rep_dirs.size() > 1 && status == 0) {
    out << fmt::format("\n# the congestion point over the {} repetitions", rep_dirs.size());
    const auto spread = run_command(spread_command(rep_dirs, dir + "/tables"), std::chrono::minutes(5));
    out << "\n" << spread.output;
    if (!spread.ok()) {
      out << "# xtk-analyze spread failed: each repetition's tables stand; rerun it by hand\n";
      status = 1;
    } else {
      fs::create_directories(fs::path(dir) / "plots");
      plot({"spread", dir + "/tables", "-o", dir + "/plots/spread.png"}, dir + "/plots/spread.png", out);
    }
  }
  return status;
}

}  // namespace xtk
