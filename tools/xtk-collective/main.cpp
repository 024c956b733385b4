// xtk-collective: NCCL / Gloo collective sweeps with nccl-tests' output, and a
// training-iteration emulator (DDP-style bucketed all-reduce overlapped with
// compute), bootstrapped by rank 0's own rendezvous - no MPI needed.
#include <fmt/format.h>

#include <iostream>

#include "collective/backend.hpp"
#include "collective/collective_flags.hpp"
#include "collective/job.hpp"
#include "collective/run_info.hpp"
#include "collective/sizes.hpp"
#include "collective/sweep.hpp"
#include "collective/sweep_report.hpp"
#include "collective/train_report.hpp"
#include "core/cli.hpp"
#include "core/signals.hpp"
#include "core/units.hpp"

namespace {

namespace xc = xtk::collective;

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
      "Collective sweeps in nccl-tests' format, a data-parallel training emulator, and the replay of a recorded\n"
      "PyTorch job's communication, on NCCL (GPU) or Gloo\n"
      "(CPU). Ranks come from flags, torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT)\n"
      "or Slurm's (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, first host of the node list); rank 0 serves\n"
      "the rendezvous.\n\n"
      "  srun -N2 --ntasks-per-node=4 xtk-collective sweep -b 8 -e 1G -f 2\n"
      "  xtk-collective train --backend gloo --model resnet50 --iters 50 --rank 0 --world-size 2 --master h0\n"
      "  torchrun --nproc-per-node 2 xtk-collective replay --trace et-rank{rank}.json --kineto kineto-rank{rank}.json",
      "xtk-collective"};
  app.set_version_flag("--version", std::string("xtk-collective ") + XTK_VERSION);
  app.require_subcommand(1);
  app.fallthrough();

  xc::JobFlags job_flags;
  xc::add_flags(app, job_flags);

  auto* backends = app.add_subcommand("backends", "list the backends built into this binary");

  xc::SweepOptions sweep;
  std::string collective = "all-reduce", min_bytes = "32M", max_bytes = "32M", step_bytes = "1M", dtype = "float",
              op = "sum";
  int check = 1, average = 1, per_iteration = 0;
  bool csv = false;
  auto* sweep_cmd =
      app.add_subcommand("sweep", "one collective over a range of sizes, in nccl-tests' table (all_reduce_perf's...)");
  sweep_cmd
      ->add_option("-C,--collective", collective,
                   "all-reduce, all-gather, broadcast, reduce-scatter (NCCL only: Gloo has none), reduce, all-to-all, "
                   "send-recv (to rank + 1, from rank - 1); nccl-tests' names (all_gather, alltoall) work too")
      ->capture_default_str();
  sweep_cmd->add_option("-r,--root", sweep.root, "root rank of broadcast and reduce")->capture_default_str();
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
  sweep_cmd
      ->add_option("-I,--per_iter_timing", per_iteration,
                   "time every iteration, 0 or 1 (CUDA events between the calls cost NCCL a few percent at 32M)")
      ->capture_default_str();
  sweep_cmd->add_option("--collectives-file", sweep.collectives_path,
                        "with -I 1: every timed call's start and end per rank, on rank 0's clock (docs/collective.md); "
                        "{rank} = the process's rank");
  sweep_cmd->add_flag("--csv", csv, "rank 0 prints the '# xtk-sweep' CSV (docs/collective.md) instead of the table");

  xc::TrainFlags train_flags;
  auto* train_cmd = app.add_subcommand("train", "emulate data-parallel training iterations of a model profile");
  xc::add_flags(*train_cmd, train_flags);

  xc::ReplayFlags replay_flags;
  auto* replay_cmd = app.add_subcommand(
      "replay",
      "replay a recorded PyTorch job's collectives with the compute between them (docs/replay.md; record with "
      "scripts/record-trace.py)");
  xc::add_flags(*replay_cmd, replay_flags);

  return xtk::run_tool(app, argc, argv, [&] {
    if (backends->parsed()) {
      for (const auto& name : xc::available_backends()) std::cout << name << '\n';
      return;
    }
    const std::int64_t timeout_ns = xc::to_timeout_ns(job_flags);
    auto backend_options =
        xc::to_backend_options(job_flags, replay_cmd->parsed() ? replay_flags.compute_mode : train_flags.compute_mode);
    backend_options.name = xc::resolve_backend_name(backend_options.name);
    const std::uint32_t gpus = job_flags.gpus;
    if (backend_options.name == "gloo" && gpus > 1) {
      throw xtk::UsageError("-g: the Gloo backend runs one rank per process; start one process per rank");
    }
    const std::vector<std::string> args(argv, argv + argc);

    if (sweep_cmd->parsed()) {
      if (csv && job_flags.json) throw xtk::UsageError("--csv and --json: give one of them");
      sweep.min_bytes = xtk::parse_flag("-b", min_bytes, xtk::parse_bytes);
      sweep.max_bytes = xtk::parse_flag("-e", max_bytes, xtk::parse_bytes);
      sweep.step_bytes = xtk::parse_flag("-i", step_bytes, xtk::parse_bytes);
      sweep.type = xtk::parse_flag("-d", dtype, xc::parse_data_type);
      sweep.op = xtk::parse_flag("-o", op, xc::parse_reduce_op);
      sweep.collective = &xc::find_collective(collective);
      if (backend_options.name == "gloo" && !sweep.collective->gloo_lacks().empty()) {
        throw xtk::UsageError(fmt::format("--collective {}: {}", collective, sweep.collective->gloo_lacks()));
      }
      sweep.check = check != 0;
      if (average < 0 || average > 3) throw xtk::UsageError("-a must be 0, 1, 2 or 3");
      if (per_iteration != 0 && per_iteration != 1) throw xtk::UsageError("-I must be 0 or 1");
      sweep.per_iteration = per_iteration == 1;
      if (!sweep.collectives_path.empty() && !sweep.per_iteration) {
        throw xtk::UsageError("--collectives-file: give -I 1 too (the calls are timed one by one only then)");
      }
      sweep.rank_time = static_cast<xc::RankTime>(average);
      if (sweep.iterations < 1) throw xtk::UsageError("-n must be at least 1");
      if (sweep.warmup < 0) throw xtk::UsageError("-w must not be negative");
      if (sweep.op == xc::ReduceOp::avg && backend_options.name == "gloo" && sweep.collective->reduces()) {
        throw xtk::UsageError("-o avg: Gloo has no average; use sum");
      }
      xc::sweep_bytes(sweep);  // usage errors now, before any rank joins
      const xc::World world = xc::resolve_world(xc::to_world_flags(job_flags));
      if (world.world_size > 1 && !sweep.collectives_path.empty() &&
          sweep.collectives_path.find("{rank}") == std::string::npos) {
        throw xtk::UsageError("--collectives-file: with several processes the path needs {rank}");
      }
      xc::Job job(world, gpus, timeout_ns, "xtk-collective");
      if (sweep.collective->rooted() && sweep.root >= job.nranks()) {
        throw xtk::UsageError(fmt::format("-r {}: the job has ranks 0 to {}", sweep.root, job.nranks() - 1));
      }
      int failed = 0;
      run_in_job(job, [&] {
        auto backend = xc::make_backend(backend_options, job);
        auto options = sweep.to_json();
        options["backend"] = backend_options.name;
        const auto info = xc::collect_run_info("sweep", args, options, *backend, job);
        xc::SweepReport report(sweep, info);
        const bool text = job.is_root() && !job_flags.json && !csv;
        if (text) report.print_header(std::cout);
        xc::run_sweep(sweep, *backend, job, [&](const xc::SweepRow& row) {
          report.add(row);
          if (text) report.print_row(std::cout, row);
        });
        if (text) report.print_footer(std::cout);
        if (job.is_root() && job_flags.json) std::cout << xtk::with_provenance(report.to_json()).dump(1) << std::endl;
        if (job.is_root() && csv) report.write_csv(std::cout);
        failed = job.is_root() ? report.failed_results() : 0;
        job.finish();
      });
      if (failed > 0) throw xtk::Error(fmt::format("{} result(s) had wrong elements (#wrong)", failed));
      return;
    }

    if (replay_cmd->parsed()) {
      const auto replay = xc::to_options(replay_flags);
      const xc::World world = xc::resolve_world(xc::to_world_flags(job_flags));
      for (const auto& [flag, path] :
           {std::pair{"-o", replay.iterations_path}, std::pair{"--collectives-file", replay.collectives_path}}) {
        if (world.world_size > 1 && !path.empty() && path.find("{rank}") == std::string::npos) {
          throw xtk::UsageError(fmt::format("{}: with several processes the path needs {{rank}}", flag));
        }
      }
      const auto trace = xc::read_replay_trace(replay, world.rank);  // bad traces before joining
      xc::check_replay_fits(trace, gpus);
      xc::Job job(world, gpus, timeout_ns, "xtk-collective");
      run_in_job(job, [&] {
        auto backend = xc::make_backend(backend_options, job);
        auto options = replay.to_json();
        options["backend"] = backend_options.name;
        const auto info = xc::collect_run_info("replay", args, options, *backend, job);
        const bool text = job.is_root() && !job_flags.json;
        if (text) info.print(std::cout);
        const auto summary = xc::run_replay(replay, trace, *backend, job);
        if (text) xc::print_replay_summary(std::cout, summary);
        if (job.is_root() && job_flags.json) {
          auto j = info.to_json();
          j["format_version"] = 1;
          j["summary"] = summary.to_json();
          std::cout << xtk::with_provenance(j).dump(1) << std::endl;
        }
        job.finish();
      });
      return;
    }

    const auto train = xc::to_options(train_flags);
    const xc::World world = xc::resolve_world(xc::to_world_flags(job_flags));
    if (world.world_size > 1 && !train.iterations_path.empty() &&
        train.iterations_path.find("{rank}") == std::string::npos) {
      throw xtk::UsageError("-o: with several processes the path needs {rank}, e.g. iterations-{rank}.csv");
    }
    if (world.world_size > 1 && !train.collectives_path.empty() &&
        train.collectives_path.find("{rank}") == std::string::npos) {
      throw xtk::UsageError(
          "--collectives-file: with several processes the path needs {rank}, e.g. collectives-{rank}.csv");
    }
    const auto profile = xc::read_profile(xc::find_profile(train_flags.model));
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
      const bool text = job.is_root() && !job_flags.json;
      if (text) info.print(std::cout);
      const auto summary = xc::run_train(train, profile, *backend, job, stop);
      if (text) xc::print_train_summary(std::cout, summary);
      if (job.is_root() && job_flags.json) {
        auto j = info.to_json();
        j["format_version"] = 1;
        j["summary"] = summary.to_json();
        std::cout << xtk::with_provenance(j).dump(1) << std::endl;
      }
      wrong = job.is_root() ? summary.wrong : 0;
      job.finish();
    });
    if (wrong > 0) throw xtk::Error(fmt::format("the data check found {} wrong elements", wrong));
  });
}
