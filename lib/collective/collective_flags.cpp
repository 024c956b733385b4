#include "collective/collective_flags.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cmath>

#include "core/cli.hpp"
#include "core/units.hpp"

namespace xtk::collective {

void add_flags(CLI::App& app, JobFlags& f) {
  app.add_option("--backend", f.backend, "nccl, gloo, or auto (nccl when built and a GPU is visible)")
      ->capture_default_str();
  app.add_option("-g,--ngpus", f.gpus, "GPUs (ranks) this process drives, from local_rank x g")->capture_default_str();
  app.add_option("--rank", f.rank, "this process's rank (with --world-size)");
  app.add_option("--world-size", f.world_size, "number of processes");
  app.add_option("--local-rank", f.local_rank, "this process's rank on its node: picks its GPU(s)");
  app.add_option("--master", f.master,
                 "rank 0's rendezvous HOST[:PORT] (default: from torchrun's or Slurm's environment, else "
                 "127.0.0.1:29500; docs/collective.md)");
  app.add_option("--master-port", f.master_port, "rendezvous port (default: as --master's)");
  app.add_option("--timeout", f.timeout, "bound on every wait: joining, each collective, barriers")
      ->capture_default_str();
  app.add_option("--gloo-algorithm", f.gloo_algorithm, "ring (PyTorch's) or bcube")->capture_default_str();
  app.add_option("--gloo-iface", f.gloo_iface,
                 "Gloo's interface (default GLOO_SOCKET_IFNAME, else the address rank 0 is reached from)")
      ->envname("GLOO_SOCKET_IFNAME");
  app.add_option("--gloo-connections", f.gloo_connections,
                 "TCP connections between each pair of ranks: every all-reduce of the whole job is split into this "
                 "many parts, run at once, one per connection (as NCCL splits a call over its channels and sockets)")
      ->check(CLI::Range(1U, kMaxGlooConnections))
      ->capture_default_str();
  app.add_flag("--json", f.json,
               "rank 0 prints the results as one JSON document instead of the text (NCCL_DEBUG's lines go to "
               "stdout too: set NCCL_DEBUG_FILE)");
}

void add_flags(CLI::App& app, TrainFlags& f) {
  app.add_option("--model", f.model,
                 "profile: a file, or NAME for NAME.csv in $XTK_MODEL_PATH or the shipped configs/models")
      ->required();
  app.add_option("--bucket", f.bucket, "DDP bucket cap (bucket_cap_mb; M = MiB)")->capture_default_str();
  app.add_option("--first-bucket", f.first_bucket, "cap of the first bucket")->capture_default_str();
  app.add_option("--compute", f.compute, "compute time of one iteration (default: the profile's compute_ms)");
  app.add_option("--forward-fraction", f.forward_fraction,
                 "forward share of the compute (default: the profile's forward_fraction, else 1/3)");
  app.add_option("--compute-scale", f.compute_scale, "multiply the compute time")->capture_default_str();
  app.add_option("--size-scale", f.size_scale,
                 "multiply every gradient and the bucket caps (0.04 emulates a 25G network on a 1G one)")
      ->capture_default_str();
  app.add_option("--compute-mode", f.compute_mode, "CPU ranks: sleep, or busy (a spinning core)")
      ->capture_default_str();
  app.add_option("--iters", f.iterations, "iterations to record (default 20 without --duration)");
  app.add_option("-t,--duration", f.duration, "or run this long");
  app.add_option("--warmup", f.warmup, "iterations first run and not recorded")->capture_default_str();
  app.add_option("--start-at", f.start_at, "wall-clock start (Unix seconds or ISO 8601 UTC)");
  app.add_option("-o,--iterations-file", f.iterations_path, "iterations file; {rank} = the process's rank; '' = none")
      ->capture_default_str();
  app.add_option("--collectives-file", f.collectives_path,
                 "each bucket all-reduce's arrival and end per rank, on rank 0's clock (the straggler table's "
                 "input); {rank} as in -o; '' = none")
      ->capture_default_str();
  app.add_flag("--no-check", f.no_check, "skip the data check after the run");
}

namespace {

// The flags before the subcommand.
Arguments job_arguments(const JobFlags& j) {
  const JobFlags dj;
  Arguments a;
  a.option("--backend", j.backend, dj.backend)
      .option("--ngpus", j.gpus, dj.gpus)
      .option("--rank", j.rank)
      .option("--world-size", j.world_size)
      .option("--local-rank", j.local_rank)
      .option("--master", j.master, dj.master)
      .option("--master-port", j.master_port)
      .option("--timeout", j.timeout, dj.timeout)
      .option("--gloo-algorithm", j.gloo_algorithm, dj.gloo_algorithm)
      .option("--gloo-iface", j.gloo_iface, dj.gloo_iface)
      .option("--gloo-connections", j.gloo_connections, dj.gloo_connections)
      .flag("--json", j.json);
  return a;
}

}  // namespace

std::vector<std::string> to_arguments(const JobFlags& j, const TrainFlags& t) {
  const TrainFlags dt;
  return job_arguments(j)
      .word("train")
      .option("--model", t.model, dt.model)
      .option("--bucket", t.bucket, dt.bucket)
      .option("--first-bucket", t.first_bucket, dt.first_bucket)
      .option("--compute", t.compute, dt.compute)
      .option("--forward-fraction", t.forward_fraction)
      .option("--compute-scale", t.compute_scale, dt.compute_scale)
      .option("--size-scale", t.size_scale, dt.size_scale)
      .option("--compute-mode", t.compute_mode, dt.compute_mode)
      .option("--iters", t.iterations, dt.iterations)
      .option("--duration", t.duration, dt.duration)
      .option("--warmup", t.warmup, dt.warmup)
      .option("--start-at", t.start_at, dt.start_at)
      .option("--iterations-file", t.iterations_path, dt.iterations_path)
      .option("--collectives-file", t.collectives_path, dt.collectives_path)
      .flag("--no-check", t.no_check)
      .list();
}

WorldFlags to_world_flags(const JobFlags& f) {
  WorldFlags w;
  w.rank = f.rank;
  w.world_size = f.world_size;
  w.local_rank = f.local_rank;
  w.master = f.master;
  w.master_port = f.master_port;
  return w;
}

BackendOptions to_backend_options(const JobFlags& j, const std::string& compute_mode) {
  if (j.gpus == 0) throw UsageError("-g must be at least 1");
  if (j.gloo_algorithm != "ring" && j.gloo_algorithm != "bcube") {
    throw UsageError(fmt::format("--gloo-algorithm: '{}' is neither ring nor bcube", j.gloo_algorithm));
  }
  BackendOptions b;
  b.name = j.backend;
  b.gloo_algorithm = j.gloo_algorithm;
  b.gloo_iface = j.gloo_iface;
  b.gloo_connections = j.gloo_connections;
  if (compute_mode == "busy") {
    b.compute = ComputeMode::busy;
  } else if (compute_mode != "sleep") {
    throw UsageError(fmt::format("--compute-mode: '{}' is neither sleep nor busy", compute_mode));
  }
  return b;
}

std::int64_t to_timeout_ns(const JobFlags& f) {
  const std::int64_t timeout_ns = parse_flag("--timeout", f.timeout, parse_duration_ns);
  if (timeout_ns <= 0) throw UsageError("--timeout must be above 0");
  return timeout_ns;
}

TrainOptions to_options(const TrainFlags& f) {
  TrainOptions t;
  t.caps.bytes = parse_flag("--bucket", f.bucket, parse_bytes);
  t.caps.first_bytes = parse_flag("--first-bucket", f.first_bucket, parse_bytes);
  if (!f.compute.empty()) t.compute_ns = parse_flag("--compute", f.compute, parse_duration_ns);
  t.forward_fraction = f.forward_fraction;
  t.compute_scale = f.compute_scale;
  t.size_scale = f.size_scale;
  t.iterations = f.iterations;
  t.warmup = f.warmup;
  if (!f.duration.empty()) t.duration_ns = parse_flag("--duration", f.duration, parse_duration_ns);
  if (!f.start_at.empty()) t.start_at_realtime_ns = parse_flag("--start-at", f.start_at, parse_wall_clock_ns);
  if (t.iterations > 0 && t.duration_ns > 0) throw UsageError("give --iters or --duration, not both");
  if (t.iterations == 0 && t.duration_ns == 0) t.iterations = 20;
  if (!(t.compute_scale >= 0) || !std::isfinite(t.compute_scale)) {
    throw UsageError("--compute-scale must be a number, not negative");
  }
  if (!(t.size_scale > 0)) throw UsageError("--size-scale must be above 0");
  t.iterations_path = f.iterations_path;
  t.collectives_path = f.collectives_path;
  t.check = !f.no_check;
  return t;
}

void add_flags(CLI::App& app, ReplayFlags& f) {
  app.add_option("--trace", f.trace,
                 "torch.profiler.ExecutionTraceObserver JSON (.gz too); {rank} = this process's rank (one trace per "
                 "rank when the job has tensor or pipeline groups)")
      ->capture_default_str();
  app.add_option("--kineto", f.kineto,
                 "the profiler's Kineto trace of the same iterations: the GPU compute between the calls ({rank} as "
                 "in --trace; without it the calls run back to back)");
  app.add_option("--compute-scale", f.compute_scale, "multiply the recorded compute")->capture_default_str();
  app.add_option("--size-scale", f.size_scale, "multiply every call's elements (0.04 emulates a 25G network on 1G)")
      ->capture_default_str();
  app.add_option("--compute-mode", f.compute_mode, "CPU ranks: sleep, or busy (a spinning core)")
      ->capture_default_str();
  app.add_option("--iters", f.iterations, "iterations to record")->capture_default_str();
  app.add_option("--warmup", f.warmup, "iterations first run and not recorded")->capture_default_str();
  app.add_option("--start-at", f.start_at, "wall-clock start (Unix seconds or ISO 8601 UTC)");
  app.add_option("-o,--iterations-file", f.iterations_path, "iterations file; {rank} = the process's rank; '' = none")
      ->capture_default_str();
  app.add_option("--collectives-file", f.collectives_path,
                 "each call's arrival and end per rank, on rank 0's clock; {rank} as in -o; '' = none")
      ->capture_default_str();
}

std::vector<std::string> to_arguments(const JobFlags& j, const ReplayFlags& r) {
  const ReplayFlags dr;
  return job_arguments(j)
      .word("replay")
      .option("--trace", r.trace, dr.trace)
      .option("--kineto", r.kineto, dr.kineto)
      .option("--compute-scale", r.compute_scale, dr.compute_scale)
      .option("--size-scale", r.size_scale, dr.size_scale)
      .option("--compute-mode", r.compute_mode, dr.compute_mode)
      .option("--iters", r.iterations, dr.iterations)
      .option("--warmup", r.warmup, dr.warmup)
      .option("--start-at", r.start_at, dr.start_at)
      .option("--iterations-file", r.iterations_path, dr.iterations_path)
      .option("--collectives-file", r.collectives_path, dr.collectives_path)
      .list();
}

ReplayOptions to_options(const ReplayFlags& f) {
  ReplayOptions r;
  r.trace = f.trace;
  r.kineto = f.kineto;
  if (!(f.compute_scale >= 0) || !std::isfinite(f.compute_scale)) {
    throw UsageError("--compute-scale must be a number, not negative");
  }
  if (!(f.size_scale > 0)) throw UsageError("--size-scale must be above 0");
  if (f.iterations == 0) throw UsageError("--iters must be at least 1");
  r.compute_scale = f.compute_scale;
  r.size_scale = f.size_scale;
  r.iterations = f.iterations;
  r.warmup = f.warmup;
  if (!f.start_at.empty()) r.start_at_realtime_ns = parse_flag("--start-at", f.start_at, parse_wall_clock_ns);
  r.iterations_path = f.iterations_path;
  r.collectives_path = f.collectives_path;
  return r;
}

}  // namespace xtk::collective
