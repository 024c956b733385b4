// xtk-collective: NCCL / Gloo all-reduce sweeps with nccl-tests' output, and a
// training-iteration emulator (DDP-style bucketed all-reduce overlapped with
// compute), bootstrapped by rank 0's own rendezvous - no MPI needed.
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "collective/backend.hpp"
#include "collective/job.hpp"
#include "collective/run_info.hpp"
#include "collective/sizes.hpp"
#include "collective/sweep.hpp"
#include "collective/sweep_report.hpp"
#include "collective/train.hpp"
#include "collective/train_report.hpp"
#include "core/cli.hpp"
#include "core/signals.hpp"
#include "core/units.hpp"

namespace {

namespace xc = xtk::collective;

void write_file(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::cout << text;
    return;
  }
  std::ofstream out(path);
  out << text;
  if (!out) throw xtk::Error(fmt::format("{}: cannot write", path));
}

// Runs `body` as this rank's part of the job: any failure is reported to rank
// 0, and every rank exits with the job's verdict.
void run_in_job(xc::Job& job, const std::function<void()>& body) {
  try {
    body();
  } catch (const xc::CollectiveError& e) {
    job.fail(xc::FailKind::waiting, e.what());
  } catch (const std::exception& e) {
    job.fail(xc::FailKind::local, e.what());
  }
}

}  // namespace

// run_tool turns every exception into an exit status; CLI11's set-up throws only on programming errors.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "All-reduce sweeps in nccl-tests' format and a data-parallel training emulator, on NCCL (GPU) or Gloo\n"
      "(CPU). Ranks come from flags, torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT)\n"
      "or Slurm's (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, first host of the node list); rank 0 serves\n"
      "the rendezvous.\n\n"
      "  srun -N2 --ntasks-per-node=4 xtk-collective sweep -b 8 -e 1G -f 2\n"
      "  xtk-collective train --backend gloo --model resnet50 --iters 50 --rank 0 --world-size 2 --master h0",
      "xtk-collective"};
  app.set_version_flag("--version", std::string("xtk-collective ") + XTK_VERSION);
  app.require_subcommand(1);
  app.fallthrough();

  xc::WorldFlags world_flags;
  xc::BackendOptions backend_options;
  backend_options.name = "auto";
  std::uint32_t gpus = 1;
  std::string timeout = "120s", json_path;
  app.add_option("--backend", backend_options.name, "nccl, gloo, or auto (nccl when built and a GPU is visible)")
      ->capture_default_str();
  app.add_option("-g,--ngpus", gpus, "GPUs (ranks) this process drives, from local_rank x g")->capture_default_str();
  app.add_option("--rank", world_flags.rank, "this process's rank (with --world-size)");
  app.add_option("--world-size", world_flags.world_size, "number of processes");
  app.add_option("--local-rank", world_flags.local_rank, "this process's rank on its node: picks its GPU(s)");
  app.add_option("--master", world_flags.master, "rank 0's rendezvous HOST[:PORT] (default MASTER_ADDR:MASTER_PORT)");
  app.add_option("--master-port", world_flags.master_port, "rendezvous port (default MASTER_PORT or 29500)");
  app.add_option("--timeout", timeout, "bound on every wait: joining, each collective, barriers")
      ->capture_default_str();
  app.add_option("--gloo-algorithm", backend_options.gloo_algorithm, "ring (PyTorch's) or bcube")
      ->capture_default_str();
  app.add_option("--gloo-iface", backend_options.gloo_iface,
                 "Gloo's interface (default GLOO_SOCKET_IFNAME, else the address rank 0 is reached from)")
      ->envname("GLOO_SOCKET_IFNAME");
  app.add_option("--json", json_path, "write the results as JSON to this file ('-' = stdout instead of the text)");

  auto* backends = app.add_subcommand("backends", "list the backends built into this binary");

  xc::SweepOptions sweep;
  std::string min_bytes = "32M", max_bytes = "32M", step_bytes = "1M", dtype = "float", op = "sum", csv_path;
  int check = 1, average = 1;
  auto* sweep_cmd = app.add_subcommand("sweep", "all-reduce over a range of sizes, nccl-tests' all_reduce_perf table");
  sweep_cmd->add_option("-b,--minbytes", min_bytes, "smallest size (K, M, G are binary: 32M = 32 MiB)")
      ->capture_default_str();
  sweep_cmd->add_option("-e,--maxbytes", max_bytes, "largest size")->capture_default_str();
  sweep_cmd->add_option("-f,--stepfactor", sweep.factor, "multiply the size by this")->capture_default_str();
  sweep_cmd->add_option("-i,--stepbytes", step_bytes, "or add this many bytes (when -f is 1)")->capture_default_str();
  sweep_cmd->add_option("-n,--iters", sweep.iterations, "timed iterations per size")->capture_default_str();
  sweep_cmd->add_option("-w,--warmup_iters", sweep.warmup, "warm-up iterations")->capture_default_str();
  sweep_cmd->add_option("-c,--check", check, "check the results (0 or 1)")->capture_default_str();
  sweep_cmd->add_option("-d,--datatype", dtype, "int8 uint8 int32 uint32 int64 uint64 half float double bfloat16")
      ->capture_default_str();
  sweep_cmd->add_option("-o,--op", op, "sum prod max min avg")->capture_default_str();
  sweep_cmd->add_option("-a,--average", average, "time over ranks: 0 rank 0, 1 mean, 2 min, 3 max")
      ->capture_default_str();
  sweep_cmd->add_option("--csv", csv_path, "also write the '# xtk-sweep' CSV (bandwidths in Gbit/s) to this file");

  xc::TrainOptions train;
  std::string model, bucket = "25M", first_bucket = "1M", compute, duration, start_at, compute_mode = "sleep";
  bool no_check = false;
  auto* train_cmd = app.add_subcommand("train", "emulate data-parallel training iterations of a model profile");
  train_cmd->add_option("--model", model, "profile: a file, or NAME for configs/models/NAME.csv")->required();
  train_cmd->add_option("--bucket", bucket, "DDP bucket cap (bucket_cap_mb; M = MiB)")->capture_default_str();
  train_cmd->add_option("--first-bucket", first_bucket, "cap of the first bucket")->capture_default_str();
  train_cmd->add_option("--compute", compute, "compute time of one iteration (default: the profile's compute_ms)");
  train_cmd->add_option("--forward-fraction", train.forward_fraction, "forward share of the compute (default 1/3)");
  train_cmd->add_option("--compute-scale", train.compute_scale, "multiply the compute time")->capture_default_str();
  train_cmd
      ->add_option("--size-scale", train.size_scale,
                   "multiply every gradient and the bucket caps (0.04 emulates a 25G network on a 1G one)")
      ->capture_default_str();
  train_cmd->add_option("--compute-mode", compute_mode, "CPU ranks: sleep, or busy (a spinning core)")
      ->capture_default_str();
  train_cmd->add_option("--iters", train.iterations, "iterations to record (default 20 without --duration)");
  train_cmd->add_option("-t,--duration", duration, "or run this long");
  train_cmd->add_option("--warmup", train.warmup, "iterations first run and not recorded")->capture_default_str();
  train_cmd->add_option("--start-at", start_at, "wall-clock start (Unix seconds or ISO 8601 UTC)");
  train_cmd
      ->add_option("-o,--iterations-file", train.iterations_path,
                   "iterations file; {rank} = the process's rank; '' = none")
      ->capture_default_str();
  train_cmd->add_flag("--no-check", no_check, "skip the data check after the run");

  return xtk::run_tool(app, argc, argv, [&] {
    if (backends->parsed()) {
      for (const auto& name : xc::available_backends()) std::cout << name << '\n';
      return;
    }
    const std::int64_t timeout_ns = xtk::parse_flag("--timeout", timeout, xtk::parse_duration_ns);
    if (timeout_ns <= 0) throw xtk::UsageError("--timeout must be above 0");
    if (gpus == 0) throw xtk::UsageError("-g must be at least 1");
    backend_options.name = xc::resolve_backend_name(backend_options.name);
    if (backend_options.name == "gloo" && gpus > 1) {
      throw xtk::UsageError("-g: the Gloo backend runs one rank per process; start one process per rank");
    }
    if (compute_mode == "busy") {
      backend_options.compute = xc::ComputeMode::busy;
    } else if (compute_mode != "sleep") {
      throw xtk::UsageError(fmt::format("--compute-mode: '{}' is neither sleep nor busy", compute_mode));
    }
    const std::vector<std::string> args(argv, argv + argc);

    if (sweep_cmd->parsed()) {
      sweep.min_bytes = xtk::parse_flag("-b", min_bytes, xtk::parse_bytes);
      sweep.max_bytes = xtk::parse_flag("-e", max_bytes, xtk::parse_bytes);
      sweep.step_bytes = xtk::parse_flag("-i", step_bytes, xtk::parse_bytes);
      sweep.type = xtk::parse_flag("-d", dtype, xc::parse_data_type);
      sweep.op = xtk::parse_flag("-o", op, xc::parse_reduce_op);
      sweep.check = check != 0;
      if (average < 0 || average > 3) throw xtk::UsageError("-a must be 0, 1, 2 or 3");
      sweep.rank_time = static_cast<xc::RankTime>(average);
      if (sweep.iterations < 1) throw xtk::UsageError("-n must be at least 1");
      if (sweep.warmup < 0) throw xtk::UsageError("-w must not be negative");
      if (sweep.op == xc::ReduceOp::avg && backend_options.name == "gloo") {
        throw xtk::UsageError("-o avg: Gloo has no average; use sum");
      }
      xc::sweep_sizes(sweep.min_bytes, sweep.max_bytes, sweep.factor, sweep.step_bytes, 1);  // usage errors now
      xc::Job job(xc::resolve_world(world_flags), gpus, timeout_ns, "xtk-collective");
      int failed = 0;
      run_in_job(job, [&] {
        auto backend = xc::make_backend(backend_options, job);
        auto options = sweep.to_json();
        options["backend"] = backend_options.name;
        const auto info = xc::collect_run_info("sweep", args, options, *backend, job);
        xc::SweepReport report(sweep, info);
        const bool text = job.is_root() && json_path != "-";
        if (text) report.print_header(std::cout);
        xc::run_sweep(sweep, *backend, job, [&](const xc::SweepRow& row) {
          report.add(row);
          if (text) report.print_row(std::cout, row);
        });
        if (text) report.print_footer(std::cout);
        if (job.is_root() && !json_path.empty()) write_file(json_path, report.to_json().dump(1) + "\n");
        if (job.is_root() && !csv_path.empty()) {
          std::ofstream out(csv_path);
          report.write_csv(out);
          if (!out) throw xtk::Error(fmt::format("{}: cannot write", csv_path));
        }
        failed = job.is_root() ? report.failed_results() : 0;
        job.finish();
      });
      if (failed > 0) throw xtk::Error(fmt::format("{} result(s) had wrong elements (#wrong)", failed));
      return;
    }

    train.caps.bytes = xtk::parse_flag("--bucket", bucket, xtk::parse_bytes);
    train.caps.first_bytes = xtk::parse_flag("--first-bucket", first_bucket, xtk::parse_bytes);
    if (!compute.empty()) train.compute_ns = xtk::parse_flag("--compute", compute, xtk::parse_duration_ns);
    if (!duration.empty()) train.duration_ns = xtk::parse_flag("--duration", duration, xtk::parse_duration_ns);
    if (!start_at.empty())
      train.start_at_realtime_ns = xtk::parse_flag("--start-at", start_at, xtk::parse_wall_clock_ns);
    if (train.iterations > 0 && train.duration_ns > 0) throw xtk::UsageError("give --iters or --duration, not both");
    if (train.iterations == 0 && train.duration_ns == 0) train.iterations = 20;
    if (train.compute_scale < 0) throw xtk::UsageError("--compute-scale must not be negative");
    if (!(train.size_scale > 0)) throw xtk::UsageError("--size-scale must be above 0");
    train.check = !no_check;
    const xc::World world = xc::resolve_world(world_flags);
    if (world.world_size > 1 && !train.iterations_path.empty() &&
        train.iterations_path.find("{rank}") == std::string::npos) {
      throw xtk::UsageError("-o: with several processes the path needs {rank}, e.g. iterations-{rank}.csv");
    }
    const auto profile = xc::read_profile(xc::find_profile(model));
    xc::compute_times(train, profile);  // usage errors now
    const auto& stop = xtk::stop_requested();
    xc::Job job(world, gpus, timeout_ns, "xtk-collective");
    std::uint64_t wrong = 0;
    run_in_job(job, [&] {
      auto backend = xc::make_backend(backend_options, job);
      auto options = train.to_json();
      options["backend"] = backend_options.name;
      options["model"] = profile.source;
      const auto info = xc::collect_run_info("train", args, options, *backend, job);
      const bool text = job.is_root() && json_path != "-";
      if (text) info.print(std::cout);
      const auto summary = xc::run_train(train, profile, *backend, job, stop);
      if (text) xc::print_train_summary(std::cout, summary);
      if (job.is_root() && !json_path.empty()) {
        auto j = info.to_json();
        j["format_version"] = 1;
        j["summary"] = summary.to_json();
        write_file(json_path, j.dump(1) + "\n");
      }
      wrong = job.is_root() ? summary.wrong : 0;
      job.finish();
    });
    if (wrong > 0) throw xtk::Error(fmt::format("the data check found {} wrong elements", wrong));
  });
}
