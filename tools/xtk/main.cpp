// xtk: the umbrella command. `xtk demo` runs the built-in experiment (the
// seed's configuration B on the netns testbed) and prints its tables.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "core/cli.hpp"
#include "core/data_files.hpp"
#include "core/signals.hpp"
#include "experiment/config.hpp"
#include "experiment/runner.hpp"

namespace {

std::string demo_config() {
  std::string path = xtk::find_shipped_file("experiments/demo.toml");
  if (path.empty()) throw xtk::Error("cannot find configs/experiments/demo.toml (reinstall xtk)");
  return path;
}

}  // namespace

// run_tool turns every exception into an exit status; CLI11's set-up throws only on programming errors.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "xtk: the cross-traffic toolkit. Tools: xtk-gen, xtk-server, xtk-client, xtk-log, xtk-collective,\n"
      "xtk-analyze, xtk-run, xtk-testbed (each has --help).",
      "xtk"};
  app.set_version_flag("--version", std::string("xtk ") + XTK_VERSION);
  app.require_subcommand(1);
  xtk::RunOptions options;
  auto* demo = app.add_subcommand(
      "demo",
      "the seed's experiment on this machine: 3 training hosts and a cross-traffic host in network namespaces,\n"
      "a 1 Gbit/s bottleneck emulating the seed's 25 Gbit/s cluster, consistent vs burst web-search from 0 to\n"
      "90 % (configs/experiments/demo.toml); prints the tables, writes plots. About 9 minutes on 2 cores");
  options.out = "xtk-demo";
  std::string config_path;
  demo->add_option("-o,--out", options.out, "experiment directory")->capture_default_str();
  demo->add_option("--config", config_path,
                   "run this experiment config instead of configs/experiments/demo.toml (a shorter one, say)")
      ->check(CLI::ExistingFile);
  demo->add_flag("--fresh", options.fresh, "run every step again (default: keep completed steps)");
  int status = 0;
  const int rc = xtk::run_tool(app, argc, argv, [&] {
    if (geteuid() != 0) {
      throw xtk::Error(
          "the demo builds a testbed of network namespaces, which needs root: run `sudo xtk demo`.\n"
          "Without root: generate and inspect schedules (xtk-gen inspect), replay them on real hosts\n"
          "(xtk-server / xtk-client), or run xtk-run with executor \"slurm\" or \"hosts\" (docs/experiments.md).");
    }
    const auto config = xtk::load_experiment_config(config_path.empty() ? demo_config() : config_path);
    status = xtk::run_experiment(config, options, xtk::stop_requested(), std::cout);
  });
  return rc != 0 ? rc : status;
}
