// xtk-run: runs an experiment config step by step (cross traffic stepping
// through loads while a training job runs), then prints the analysis tables.
#include <iostream>
#include <optional>

#include "core/cli.hpp"
#include "core/signals.hpp"
#include "experiment/config.hpp"
#include "experiment/runner.hpp"

// run_tool turns every exception into an exit status; CLI11's set-up throws only on programming errors.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "Run an experiment: for every model, a zero-load step, then each cross-traffic profile at each load,\n"
      "recording iterations, flows and counters per step; then print xtk-analyze's tables (with repetitions,\n"
      "each repetition's, then the congestion point over them: xtk-analyze spread).\n"
      "Completed steps are kept: rerun the same command to resume after Ctrl-C or a failure (a config that\n"
      "changed what they measured is refused: --fresh, or another --out). A config's\n"
      "emulate_link runs a faster cluster's job on a slower testbed (docs/experiments.md).\n\n"
      "  xtk-run configs/experiments/seed-001.toml",
      "xtk-run"};
  app.set_version_flag("--version", std::string("xtk-run ") + XTK_VERSION);
  std::string config_path;
  xtk::RunOptions options;
  bool no_analysis = false, quiet = false;
  std::string executor;
  app.add_option("config", config_path, "experiment config (TOML; see docs/experiments.md)")->required();
  app.add_option("-o,--out", options.out, "experiment directory (default: the config's out, runs/<name>)");
  app.add_option("--executor", executor, "netns, slurm or hosts: overrides the config's");
  app.add_flag("--fresh", options.fresh, "run every step again, even those completed before");
  app.add_flag("--no-analysis", no_analysis, "skip the tables and plots at the end");
  app.add_flag("-q,--quiet", quiet, "no progress line on stderr");
  int status = 0;
  const int rc = xtk::run_tool(app, argc, argv, [&] {
    std::optional<xtk::ExecutorKind> kind;
    if (!executor.empty()) kind = xtk::parse_executor(executor);
    const auto config = xtk::load_experiment_config(config_path, kind);
    for (const auto& note : config.notes) std::cerr << "xtk-run: " << note << "\n";
    options.analyze = !no_analysis;
    options.progress = !quiet;
    status = xtk::run_experiment(config, options, xtk::stop_requested(), std::cout);
  });
  return rc != 0 ? rc : status;
}
