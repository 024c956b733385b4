// xtk-analyze: turns run directories into the tables of a paper (iteration
// time, congestion point, bandwidth, fits) and predicts the traffic of a
// training job. One subcommand per job; the work is in lib/analysis.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <iostream>
#include <set>

#include "analysis/fit.hpp"
#include "analysis/model_params.hpp"
#include "analysis/predict.hpp"
#include "analysis/spread.hpp"
#include "analysis/tables_flags.hpp"
#include "capture_commands.hpp"
#include "core/cli.hpp"
#include "core/units.hpp"
#include "flows_command.hpp"
#include "stragglers_command.hpp"

namespace {

namespace an = xtk::analysis;

// Loads an experiment and tells what was left out of it, and why.
an::Experiment load(const std::string& dir, const an::TablesOptions& options) {
  auto experiment = an::load_experiment(dir, options);
  for (const auto& note : experiment.skipped) std::cerr << "xtk-analyze: note: skipping " << note << '\n';
  for (const auto& step : experiment.steps) {
    for (const auto& note : step.notes) std::cerr << "xtk-analyze: note: " << note << '\n';
  }
  return experiment;
}

void run_tables(const an::TablesFlags& f) {
  const auto options = an::to_options(f);
  auto tables = an::make_tables(load(f.dir, options), options);
  if (!f.only.empty()) {
    const std::set<std::string> wanted(f.only.begin(), f.only.end());
    std::erase_if(tables, [&](const an::NamedTable& t) { return wanted.count(t.name) == 0; });
  }
  an::emit(tables, f.out, !f.only.empty());
}

void run_spread(const an::SpreadFlags& f) {
  const auto options = an::to_options(f);
  std::vector<an::RunPoints> runs;
  for (const auto& dir : an::spread_runs(f)) {
    if (!an::is_tables_dir(dir)) {
      runs.push_back(an::run_points(load(dir, options), options));
    } else if (f.method == an::MethodFlags{}) {
      runs.push_back(an::read_run_points(dir));
    } else {
      throw xtk::UsageError(
          fmt::format("{} holds a run's tables, computed with their own method: the method flags "
                      "apply to runs given by their step directories",
                      dir));
    }
  }
  an::emit(an::spread_tables(runs), f.out, true);
}

struct GptFlags {
  an::GptConfig config;
  std::string peak, mfu = "0.5", bw, bw_tp, bw_pp, bw_dp;
  bool no_recompute = false;
  an::OutputFlags out;
};

void run_predict_gpt(GptFlags f) {
  auto& c = f.config;
  c.peak_flops = f.peak.empty() ? 0 : xtk::parse_flag("--peak", f.peak, xtk::parse_flops);
  c.utilisation = xtk::parse_flag("--mfu", f.mfu, xtk::parse_share);
  const double all = f.bw.empty() ? 0 : xtk::parse_flag("--bw", f.bw, xtk::parse_rate_bps);
  c.bw_tp_bps = f.bw_tp.empty() ? all : xtk::parse_flag("--bw-tp", f.bw_tp, xtk::parse_rate_bps);
  c.bw_pp_bps = f.bw_pp.empty() ? all : xtk::parse_flag("--bw-pp", f.bw_pp, xtk::parse_rate_bps);
  c.bw_dp_bps = f.bw_dp.empty() ? all : xtk::parse_flag("--bw-dp", f.bw_dp, xtk::parse_rate_bps);
  c.recompute = !f.no_recompute;
  an::emit(an::prediction_tables(an::predict_gpt(c)), f.out, true);
}

struct DpFlags {
  std::string model, models, compute_time, bw, bucket;
  std::uint64_t ranks = 0;
  double params = 0, bytes_per_param = 0;
  an::OutputFlags out;
};

void run_predict_dp(const DpFlags& f) {
  an::DpConfig c;
  c.model = f.model;
  c.ranks = f.ranks;
  if (f.params < 0 || !std::isfinite(f.params)) throw xtk::UsageError("--params must be a number above 0");
  if (f.bytes_per_param < 0 || !std::isfinite(f.bytes_per_param)) {
    throw xtk::UsageError("--bytes-per-param must be a number above 0");
  }
  c.params = f.params;
  c.bytes_per_param = f.bytes_per_param;
  if (c.params == 0 || c.bytes_per_param == 0) {
    const auto table = an::ModelTable::load(an::resolve_model_table(f.models));
    const auto* row = table.find(f.model);
    if (row == nullptr) {
      std::vector<std::string> known;
      for (const auto& m : table.models()) known.push_back(m.model);
      throw xtk::UsageError(fmt::format("--model: '{}' is not in {} (models: {}); give --params and --bytes-per-param",
                                        f.model, table.path(), fmt::join(known, ", ")));
    }
    if (c.params == 0) c.params = static_cast<double>(row->params);
    if (c.bytes_per_param == 0) c.bytes_per_param = row->bytes_per_param;
  }
  c.compute_us =
      f.compute_time.empty()
          ? 0
          : static_cast<double>(xtk::parse_flag("--compute-time", f.compute_time, xtk::parse_duration_ns)) / 1e3;
  c.bw_bps = f.bw.empty() ? 0 : xtk::parse_flag("--bw", f.bw, xtk::parse_rate_bps);
  c.bucket_bytes = f.bucket.empty() ? 0 : static_cast<double>(xtk::parse_flag("--bucket", f.bucket, xtk::parse_bytes));
  an::emit(an::prediction_tables(an::predict_dp(c)), f.out, true);
}

}  // namespace

// run_tool turns every exception into an exit status; CLI11's set-up throws only on programming errors.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "Analyse xtk experiment directories into tables, and predict the traffic of training jobs.\n"
      "Layout and formats: docs/run-directory.md; tables and methods: docs/analysis.md.\n\n"
      "  xtk-analyze tables EXPERIMENT_DIR [-o DIR] [--json | --csv | --markdown]\n"
      "  xtk-analyze spread RUN_DIR RUN_DIR... [-o DIR]         # or one EXPERIMENT_DIR: its rep1, rep2, ...\n"
      "  xtk-analyze predict gpt --layers 24 --hidden 2048 --seq 2048 --vocab 51200 --global-batch 512 \\\n"
      "      --tp 2 --pp 4 --dp 8 --peak 989T --bw-tp 2.4T --bw-pp 200G --bw-dp 200G\n"
      "  xtk-analyze predict dp --model resnet50 --ranks 4 --compute-time 180ms --bw 25G\n"
      "  xtk-analyze flows h0-flows.csv h2-flows.csv\n"
      "  xtk-analyze stragglers collectives-*.csv",
      "xtk-analyze"};
  app.set_version_flag("--version", std::string("xtk-analyze ") + XTK_VERSION);
  app.require_subcommand(1);

  an::TablesFlags t;
  auto* tables = app.add_subcommand("tables", "the seed's tables from an experiment directory (one run.json per step)");
  an::add_flags(*tables, t);

  an::SpreadFlags sp;
  auto* spread = app.add_subcommand(
      "spread",
      "the congestion point (table 3) over several runs of one experiment: each run's, then the median and range");
  an::add_flags(*spread, sp);

  auto* predict = app.add_subcommand("predict", "traffic, compute and iteration time of a training job");
  predict->require_subcommand(1);

  GptFlags g;
  auto* gpt =
      predict->add_subcommand("gpt", "a GPT with tensor, pipeline and data parallelism (Li et al., APNet 2024)");
  gpt->add_option("--layers", g.config.layers, "l: transformer layers")->required();
  gpt->add_option("--hidden", g.config.hidden, "h: hidden size")->required();
  gpt->add_option("--seq", g.config.seq, "s: sequence length")->required();
  gpt->add_option("--vocab", g.config.vocab, "V: vocabulary size")->required();
  gpt->add_option("--global-batch", g.config.global_batch, "B: sequences per iteration")->required();
  gpt->add_option("--micro-batch", g.config.micro_batch, "b: sequences per micro-batch")->capture_default_str();
  gpt->add_option("--micro-batches", g.config.micro_batches, "m per iteration (default B / (b d))");
  gpt->add_option("--tp", g.config.tp, "t: tensor-parallel size")->capture_default_str();
  gpt->add_option("--pp", g.config.pp, "p: pipeline stages")->capture_default_str();
  gpt->add_option("--dp", g.config.dp, "d: data-parallel size")->capture_default_str();
  gpt->add_option("--peak", g.peak, "F: peak FLOP/s per GPU, needed (989T for an H100's dense bf16)");
  gpt->add_option("--mfu", g.mfu, "mu: share of the peak achieved")->capture_default_str();
  gpt->add_option("--bw", g.bw, "effective bandwidth of every traffic type (bit/s)");
  gpt->add_option("--bw-tp", g.bw_tp, "C_TP: tensor-parallel all-reduce bandwidth (e.g. NVLink 2.4T)");
  gpt->add_option("--bw-pp", g.bw_pp, "C_PP: pipeline send/recv bandwidth (also the embedding sync)");
  gpt->add_option("--bw-dp", g.bw_dp, "C_DP: data-parallel all-reduce bandwidth");
  gpt->add_flag("--no-recompute", g.no_recompute, "no activation recomputation (4 TP all-reduces per layer, not 6)");
  an::add_flags(*gpt, g.out);

  DpFlags d;
  auto* dp = predict->add_subcommand("dp", "a pure data-parallel job (ring all-reduce) of a model in the model table");
  dp->add_option("--model", d.model, "model name in configs/models/params.csv")->required();
  dp->add_option("--ranks", d.ranks, "N: data-parallel ranks")->required();
  dp->add_option("--compute-time", d.compute_time, "forward + backward time per iteration, needed (e.g. 180ms)");
  dp->add_option("--bw", d.bw, "effective all-reduce bandwidth per rank, needed with 2 ranks or more (e.g. 25G)");
  dp->add_option("--bucket", d.bucket, "gradient bucket size (PyTorch DDP: 25MiB); default one all-reduce");
  dp->add_option("--params", d.params, "P, instead of the model table's");
  dp->add_option("--bytes-per-param", d.bytes_per_param, "gradient bytes per parameter, instead of the table's");
  dp->add_option("--models", d.models, "model table (default configs/models/params.csv)");
  an::add_flags(*dp, d.out);

  const auto run_capture_command = add_capture_commands(app);
  const auto run_flows_command = add_flows_command(app);
  const auto run_stragglers_command = add_stragglers_command(app);

  return xtk::run_tool(app, argc, argv, [&] {
    if (tables->parsed()) run_tables(t);
    if (spread->parsed()) run_spread(sp);
    if (gpt->parsed()) run_predict_gpt(g);
    if (dp->parsed()) run_predict_dp(d);
    run_capture_command();
    run_flows_command();
    run_stragglers_command();
  });
}
