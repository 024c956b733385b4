// Every role's command line, defined once in its tool's library: flags ->
// argv -> flags gives back what went in, and every command xtk-run builds
// (lib/experiment/commands) parses with its tool's own flag registration into
// the options the tool would run with. A flag renamed or retyped on either
// side fails here, without root and without running a tool.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <functional>

#include "analysis/tables_flags.hpp"
#include "capture/log_flags.hpp"
#include "collective/collective_flags.hpp"
#include "core/cpus.hpp"
#include "experiment/commands.hpp"
#include "flow/client_flags.hpp"
#include "flow/server_flags.hpp"
#include "workload/gen_flags.hpp"

namespace xtk {
namespace {

// Parses `args` (no program name) as the tool would: `add` registers the
// flags, on a subcommand it creates where the tool has one.
template <typename Flags>
Flags parse(std::vector<std::string> args, const std::function<void(CLI::App&, Flags&)>& add) {
  CLI::App app("test", "tool");
  Flags flags;
  add(app, flags);
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector back to front
  app.parse(args);
  return flags;
}

template <typename Flags>
void on(CLI::App& app, Flags& flags) {
  add_flags(app, flags);
}

template <typename Flags>
std::function<void(CLI::App&, Flags&)> on_subcommand(const std::string& name) {
  return [name](CLI::App& app, Flags& flags) {
    app.require_subcommand(1);
    add_flags(*app.add_subcommand(name), flags);
  };
}

// The commands xtk-run builds name the tools they find (none is run).
void use_built_tools() {
  std::string path;
  for (const char* tool : {"xtk-server", "xtk-client", "xtk-gen", "xtk-log", "xtk-analyze", "xtk-collective"}) {
    path += std::string(XTK_TOOLS_DIR) + "/" + tool + ":";
  }
  ::setenv("PATH", (path + std::getenv("PATH")).c_str(), 1);
}

// A tool's command without its path.
std::vector<std::string> arguments_of(std::vector<std::string> command) {
  command.erase(command.begin());
  return command;
}

TEST(CommandLines, ServerFlagsRoundTrip) {
  ServerFlags f;
  f.transport = "rdma";
  f.device = {"mlx5_1", 2, 3, 106, 5, "1M", 32, "send"};
  f.listen = {"10.0.0.1:7001", "[::1]:7002"};
  f.threads = 3;
  f.max_connections = 77;
  f.header_timeout = "2s";
  f.idle_timeout = "9s";
  f.max_flow_size = "4GiB";
  f.token = "secret phrase";
  f.send_buffer = "4KiB";
  f.receive_buffer = "8192";
  f.interval = "250ms";
  f.duration = "30s";
  f.json = true;
  f.quiet = true;
  f.no_io_uring = true;
  EXPECT_EQ(parse<ServerFlags>(to_arguments(f), on<ServerFlags>), f);
  EXPECT_TRUE(to_arguments(ServerFlags{}).empty());
  EXPECT_EQ(to_options(f).max_flow_bytes, 4ULL << 30);
  EXPECT_EQ(to_options(f).send_buffer, 4096);
  EXPECT_FALSE(to_options(f).batch_sends);
  EXPECT_TRUE(to_options(ServerFlags{}).batch_sends);
}

TEST(CommandLines, ClientFlagsRoundTrip) {
  ClientFlags f;
  f.schedule = "web.csv";
  f.records = "out.jsonl";
  f.transport = "rdma";
  f.device = {"mlx5_0", 1, 0, 0, 0, "4K", 4, "write"};
  f.map = {"h1=10.0.0.2", "h2=10.0.0.3:7001"};
  f.cpus = {"0", "0-1"};
  f.port = 7100;
  f.threads = 2;
  f.policy = "per-flow";
  f.direction = "pull";
  f.pool_limit = 8;
  f.pool_init = 0;
  f.pool_ahead = "5ms";
  f.spin = "50us";
  f.wake_latency = "0";
  f.congestion_control = "dctcp";
  f.realtime = false;
  f.no_nodelay = true;
  f.no_io_uring = true;
  f.send_buffer = "1";
  f.receive_buffer = "2MiB";
  f.flow_timeout = "3s";
  f.retry = "1s";
  f.grace = "500ms";
  f.duration = "10s";
  f.start_at = "1764000000.5";
  f.token = "t";
  f.link = "1G";
  f.bulk_streams = 4;
  f.bulk_dst = "10.0.0.2";
  f.bulk_rate = "100M";
  f.json = true;
  f.no_progress = true;
  EXPECT_EQ(parse<ClientFlags>(to_arguments(f), on<ClientFlags>), f);
  const auto o = to_options(f);
  EXPECT_EQ(o.timing.pinning, CpuPinning::list);
  EXPECT_EQ(o.timing.cpus, (std::vector<int>{0, 0, 1}));
  EXPECT_FALSE(o.timing.realtime);
  EXPECT_EQ(o.timing.cpu_wake_latency_ns, 0);
  EXPECT_EQ(o.spin_ns, 50'000);
  EXPECT_EQ(o.start_at_realtime_ns, 1'764'000'000'500'000'000);
  EXPECT_EQ(o.bulk_rate_bps, 100'000'000U);
  EXPECT_FALSE(o.batch_sends);
  EXPECT_EQ(o.device.message_bytes, 4096U);
  EXPECT_EQ(o.device.gid_index, 0);
}

// --threads 0 (the default): one worker for a schedule; in bulk mode one per
// stream, up to the CPUs this process may use; a number given is kept.
TEST(CommandLines, ClientThreadsFollowTheBulkStreamsUpToTheCpus) {
  const std::size_t cpus = std::max<std::size_t>(1, allowed_cpus().size());
  ClientFlags f;
  f.schedule = "web.csv";
  EXPECT_EQ(to_options(f).threads, 1U);
  f.schedule.clear();
  f.bulk_dst = "10.0.0.2";
  f.duration = "1s";
  f.bulk_streams = 1;
  EXPECT_EQ(to_options(f).threads, 1U);
  f.bulk_streams = 64;
  EXPECT_EQ(to_options(f).threads, std::min<std::size_t>(64, cpus));
  f.threads = 3;
  EXPECT_EQ(to_options(f).threads, 3U);
  EXPECT_EQ(parse<ClientFlags>({"--bulk", "4"}, on<ClientFlags>).threads, 0U);
}

// A repeatable option takes one value each time: the schedule after it stays the schedule.
TEST(CommandLines, RepeatableClientOptionsLeaveTheScheduleAfterThem) {
  const auto f = parse<ClientFlags>({"--cpus", "none", "--map", "h1=10.0.0.2", "web.csv"}, on<ClientFlags>);
  EXPECT_EQ(f.schedule, "web.csv");
  EXPECT_EQ(f.cpus, std::vector<std::string>{"none"});
  EXPECT_EQ(f.map, std::vector<std::string>{"h1=10.0.0.2"});
  const auto twice = parse<ClientFlags>({"--cpus", "0", "--cpus", "1", "web.csv"}, on<ClientFlags>);
  EXPECT_EQ(twice.cpus, (std::vector<std::string>{"0", "1"}));
}

// Precision is the default (issue 19); each choice has a word that turns it off.
TEST(CommandLines, ClientTimingDefaultsAndTheirOffSwitches) {
  ClientFlags f;
  f.schedule = "web.csv";
  EXPECT_TRUE(to_arguments(f) == std::vector<std::string>{"web.csv"});
  auto o = to_options(f);
  EXPECT_TRUE(o.timing.realtime);
  EXPECT_EQ(o.timing.pinning, CpuPinning::automatic);
  EXPECT_EQ(o.timing.cpu_wake_latency_ns, kWakeLatencyAuto);

  f.realtime = false;
  f.cpus = {"none"};
  f.wake_latency = "none";
  EXPECT_EQ(parse<ClientFlags>(to_arguments(f), on<ClientFlags>), f);
  o = to_options(f);
  EXPECT_FALSE(o.timing.realtime);
  EXPECT_EQ(o.timing.pinning, CpuPinning::none);
  EXPECT_EQ(o.timing.cpu_wake_latency_ns, kWakeLatencyNone);
  f.wake_latency = "soon";
  EXPECT_THROW(to_options(f), UsageError);
}

TEST(CommandLines, GenFlagsRoundTrip) {
  GenFlags f;
  f.profile = "burst";
  f.cdf = "data-mining";
  f.load = "30%";
  f.link = "1G";
  f.duration = "2s";
  f.seed = 9;
  f.src = "h0,h2";
  f.dst = "h1:3,h3:1";
  f.pattern = "one-to-one";
  f.burst_width = "2ms";
  f.burst_period = "40ms";
  f.dscp = "0:0.5,26:0.5";
  f.flow_rate = "100M";
  f.congestion_control = "cubic:0.5,reno:0.5";
  f.stagger = "1ms";
  f.burst_height = 2.5;
  f.size_scale = 0.04;
  f.min_burst_flows = 3;
  f.min_rest_flows = 5;
  f.flows = 4;
  f.out = "s-{src}.csv";
  f.inspect = true;
  f.json = true;
  EXPECT_EQ(parse<GenFlags>(to_arguments(f), on<GenFlags>), f);
  // Doubles come back exactly, so an emulated step's size scale is what ran.
  f.size_scale = 1.0 / 25;
  EXPECT_EQ(parse<GenFlags>(to_arguments(f), on<GenFlags>).size_scale, 1.0 / 25);
}

TEST(CommandLines, LogFlagsRoundTrip) {
  capture::CounterFlags c;
  c.sources = {"net:eth0", "ethtool:eth0=rx_*"};
  c.period = "10ms";
  c.duration = "5s";
  c.slow = "1ms";
  c.spin = "20us";
  c.wake_latency = "0";
  c.out = "c.csv";
  c.cpu = 1;
  c.fifo = 50;
  c.list = true;
  c.json = true;
  EXPECT_EQ(parse<capture::CounterFlags>(to_arguments(c), on_subcommand<capture::CounterFlags>("counters")), c);

  capture::CaptureFlags p;
  p.interfaces = {"eth0", "eth1"};
  p.filter = "tcp port 7000";
  p.tstamp = "adapter";
  p.buffer = "64MiB";
  p.out = "x-{if}.pcap";
  p.rotate_size = "1GiB";
  p.rotate_time = "60s";
  p.duration = "3s";
  p.stats_every = "0";
  p.bin = "10ms";
  p.per = "direction";
  p.snaplen = 96;
  p.no_promisc = true;
  p.summarize = true;
  p.json = true;
  EXPECT_EQ(parse<capture::CaptureFlags>(to_arguments(p), on_subcommand<capture::CaptureFlags>("capture")), p);
}

TEST(CommandLines, TablesFlagsRoundTrip) {
  analysis::TablesFlags f;
  f.dir = "runs/x";
  f.out.dir = "runs/x/tables";
  f.out.csv = true;
  f.only = {"iteration_time", "congestion_point"};
  f.method.warmup = 2;
  f.method.flat_tolerance = "0.1";
  f.light = "20%";
  f.heavy = "70%";
  f.fit_n = "2";
  f.method.models = "params.csv";
  f.method.tangent_points = 3;
  EXPECT_EQ(parse<analysis::TablesFlags>(to_arguments(f), on_subcommand<analysis::TablesFlags>("tables")), f);
  const auto o = to_options(f);
  EXPECT_DOUBLE_EQ(o.light, 0.2);
  EXPECT_EQ(o.fit_n, 2.0);
  EXPECT_EQ(o.step.warmup, 2u);
  EXPECT_DOUBLE_EQ(o.congestion.flat_tolerance, 0.1);
}

TEST(CommandLines, SpreadFlagsRoundTrip) {
  analysis::SpreadFlags f;
  f.dirs = {"runs/x/rep1", "runs/x/rep2", "runs/x/rep3"};
  f.out.dir = "runs/x/tables";
  f.out.markdown = true;
  f.method.warmup = 1;
  f.method.flat_tolerance = "10%";
  f.method.tangent_points = 3;
  f.method.models = "params.csv";
  EXPECT_EQ(parse<analysis::SpreadFlags>(to_arguments(f), on_subcommand<analysis::SpreadFlags>("spread")), f);
  const auto o = to_options(f);
  EXPECT_EQ(o.congestion.tangent_points, 3u);
  EXPECT_EQ(o.models_file, "params.csv");
  EXPECT_EQ(spread_runs(f), f.dirs);
}

struct Collective {
  collective::JobFlags job;
  collective::TrainFlags train;
  bool operator==(const Collective&) const = default;
};

void on_collective(CLI::App& app, Collective& c) {
  add_flags(app, c.job);
  app.require_subcommand(1);
  add_flags(*app.add_subcommand("train"), c.train);
}

TEST(CommandLines, CollectiveTrainFlagsRoundTrip) {
  ::unsetenv("GLOO_SOCKET_IFNAME");  // the flag's environment fallback
  Collective c;
  c.job.backend = "gloo";
  c.job.gpus = 2;
  c.job.rank = 1;
  c.job.world_size = 4;
  c.job.local_rank = 0;
  c.job.master = "h0:29600";
  c.job.master_port = 29601;
  c.job.timeout = "30s";
  c.job.gloo_algorithm = "bcube";
  c.job.gloo_iface = "eth0";
  c.job.gloo_connections = 4;
  c.job.json = true;
  c.train.model = "resnet50";
  c.train.bucket = "50M";
  c.train.first_bucket = "2M";
  c.train.compute = "100ms";
  c.train.forward_fraction = 0.25;
  c.train.compute_scale = 25;
  c.train.size_scale = 0.04;
  c.train.compute_mode = "busy";
  c.train.iterations = 30;
  c.train.warmup = 3;
  c.train.duration = "";
  c.train.start_at = "1764000000.25";
  c.train.iterations_path = "it-{rank}.csv";
  c.train.no_check = true;
  EXPECT_EQ(parse<Collective>(to_arguments(c.job, c.train), on_collective), c);
  const auto t = to_options(c.train);
  EXPECT_EQ(t.caps.bytes, 50ULL << 20);
  EXPECT_EQ(t.compute_ns, 100'000'000);
  for (const double bad : {-1.0, std::nan(""), HUGE_VAL}) {
    auto flags = c.train;
    flags.compute_scale = bad;
    EXPECT_THROW(to_options(flags), UsageError) << bad;  // a compute of nothing, or of forever
  }
  // --gloo-algorithm is checked with the flags, before any rank joins.
  auto job = c.job;
  job.gloo_algorithm = "tree";
  EXPECT_THROW(to_backend_options(job, "sleep"), UsageError);
}

struct Replay {
  collective::JobFlags job;
  collective::ReplayFlags replay;
  bool operator==(const Replay&) const = default;
};

void on_replay(CLI::App& app, Replay& r) {
  add_flags(app, r.job);
  app.require_subcommand(1);
  add_flags(*app.add_subcommand("replay"), r.replay);
}

TEST(CommandLines, CollectiveReplayFlagsRoundTripAndXtkRunRendersThem) {
  ::unsetenv("GLOO_SOCKET_IFNAME");
  Replay r;
  r.job.backend = "nccl";
  r.job.rank = 1;
  r.job.world_size = 2;
  r.replay.trace = "t/et-rank{rank}.json.gz";
  r.replay.kineto = "t/kineto-rank{rank}.json.gz";
  r.replay.compute_scale = 5;
  r.replay.size_scale = 0.2;
  r.replay.compute_mode = "busy";
  r.replay.iterations = 12;
  r.replay.warmup = 0;
  r.replay.start_at = "1764000000.5";
  r.replay.iterations_path = "i-{rank}.csv";
  r.replay.collectives_path = "c-{rank}.csv";
  EXPECT_EQ(parse<Replay>(to_arguments(r.job, r.replay), on_replay), r);
  EXPECT_EQ(to_options(r.replay).kineto, "t/kineto-rank{rank}.json.gz");

  // [training] replay: xtk-run launches `replay` with the step's scaling.
  use_built_tools();
  const auto config = parse_experiment_config(
      "[experiment]\nlink = \"1G\"\nemulate_link = \"25G\"\nemulation = \"both\"\n"
      "[training]\nbackend = \"gloo\"\nranks = 2\niterations = 7\nreplay = \"et-rank{rank}.json\"\n"
      "kineto = \"k-rank{rank}.json\"\n",
      "t.toml");
  RankLaunch launch;
  launch.rank = 1;
  launch.master = "10.77.0.1:29501";
  launch.iterations_path = "s/iterations-{rank}.csv";
  launch.collectives_path = "s/collectives-{rank}.csv";
  const auto argv = training_command(config, StepPlan{"resnet50", "none", 0, 0.0, "", 5}, launch);
  const auto at = std::find(argv.begin(), argv.end(), "replay");
  ASSERT_NE(at, argv.end());
  Replay parsed = parse<Replay>(std::vector<std::string>(at, argv.end()), [](CLI::App& app, Replay& parsed_flags) {
    app.require_subcommand(1);
    add_flags(*app.add_subcommand("replay"), parsed_flags.replay);
  });
  EXPECT_EQ(parsed.replay.trace, "et-rank{rank}.json");
  EXPECT_EQ(parsed.replay.kineto, "k-rank{rank}.json");
  EXPECT_EQ(parsed.replay.iterations, 7u);
  EXPECT_DOUBLE_EQ(parsed.replay.compute_scale, 5.0);  // 25G on 1G, half in bytes, half in time
  EXPECT_DOUBLE_EQ(parsed.replay.size_scale, 0.2);
  EXPECT_EQ(parsed.replay.collectives_path, "s/collectives-{rank}.csv");
}

// What xtk-run launches in an emulated burst step with Gloo ranks: each
// command parses with its tool's flags into the options it is meant to give.
TEST(CommandLines, EveryRoleXtkRunLaunchesParsesIntoItsOptions) {
  use_built_tools();
  const auto config = parse_experiment_config(
      "[experiment]\nlink = \"1G\"\nemulate_link = \"25G\"\nemulation = \"both\"\n"
      "[training]\nbackend = \"gloo\"\nranks = 2\niterations = 7\nwarmup = 2\nbucket = \"10M\"\n"
      "gloo_connections = 3\n"
      "[cross_traffic]\nprofiles = [\"burst\"]\nloads = [0.3]\nburst_width = \"1ms\"\nburst_height = 2.5\n",
      "t.toml");
  const StepPlan step{"resnet50", "burst", 1, 0.3, "", 5};

  const auto server = to_options(parse<ServerFlags>(arguments_of(server_command(config, 7123)), on<ServerFlags>));
  EXPECT_EQ(server.listen, (std::vector<std::string>{"[::]:7123"}));

  const auto client = parse<ClientFlags>(
      arguments_of(client_command(config, "s.csv", "h1", "10.77.0.2", 7123, "r.csv", 1'764'000'000'000'000'000)),
      on<ClientFlags>);
  const auto client_options = to_options(client);
  EXPECT_EQ(client_options.schedule, "s.csv");
  EXPECT_EQ(client_options.map, (std::vector<std::string>{"h1=10.77.0.2"}));
  EXPECT_EQ(client_options.port, 7123);
  EXPECT_EQ(client_options.start_at_realtime_ns, 1'764'000'000'000'000'000);
  EXPECT_TRUE(client.json);
  // The netns testbed's clients share the CPUs with the ranks: no SCHED_FIFO, no PM QoS.
  EXPECT_FALSE(client_options.timing.realtime);
  EXPECT_EQ(client_options.timing.cpu_wake_latency_ns, kWakeLatencyNone);

  const auto gen = parse<GenFlags>(arguments_of(schedule_command(config, step, "h0", "h1", "s.csv")), on<GenFlags>);
  EXPECT_EQ(gen.profile, "burst");
  EXPECT_EQ(gen.load, "0.3");
  EXPECT_EQ(gen.seed, 5U);
  EXPECT_DOUBLE_EQ(gen.size_scale, 0.2);  // "both": bytes x 1/5 and times x 5 make the factor of 25
  EXPECT_EQ(gen.burst_width, "5000000ns");
  EXPECT_DOUBLE_EQ(gen.burst_height, 2.5);
  EXPECT_NO_THROW(to_config(gen));

  const auto counters = to_options(
      parse<capture::CounterFlags>(arguments_of(counters_command({"net:eth0", "snmp=Tcp:RetransSegs"}, "1ms", "c.csv")),
                                   on_subcommand<capture::CounterFlags>("counters")));
  EXPECT_EQ(counters.period_ns, 1'000'000);
  EXPECT_EQ(counters.out, "c.csv");

  const auto capture =
      to_options(parse<capture::CaptureFlags>(arguments_of(capture_command("eth0", "1ms", "tcp port 7000", "bins.csv")),
                                              on_subcommand<capture::CaptureFlags>("capture")));
  EXPECT_TRUE(capture.summarize);
  EXPECT_EQ(capture.filter, "tcp port 7000");

  const auto tables = parse<analysis::TablesFlags>(arguments_of(tables_command("runs/x", "runs/x/tables")),
                                                   on_subcommand<analysis::TablesFlags>("tables"));
  EXPECT_EQ(tables.dir, "runs/x");
  EXPECT_EQ(tables.out.dir, "runs/x/tables");
  const auto spread =
      parse<analysis::SpreadFlags>(arguments_of(spread_command({"runs/x/rep1", "runs/x/rep2"}, "runs/x/tables")),
                                   on_subcommand<analysis::SpreadFlags>("spread"));
  EXPECT_EQ(spread.dirs, (std::vector<std::string>{"runs/x/rep1", "runs/x/rep2"}));
  EXPECT_EQ(spread.out.dir, "runs/x/tables");

  RankLaunch launch;
  launch.rank = 1;
  launch.master = "10.77.0.1:29501";
  launch.iterations_path = "/runs/x/iterations-{rank}.csv";
  launch.start_realtime_ns = 1'764'000'000'000'000'000;
  auto rank = training_command(config, step, launch);
  const auto tool = std::find_if(rank.begin(), rank.end(),
                                 [](const std::string& a) { return a.find("xtk-collective") != std::string::npos; });
  ASSERT_NE(tool, rank.end());
  const auto train = parse<Collective>(std::vector<std::string>(tool + 1, rank.end()), on_collective);
  EXPECT_EQ(train.job.backend, "gloo");
  EXPECT_EQ(to_backend_options(train.job, train.train.compute_mode).gloo_connections, 3U);
  const auto options = to_options(train.train);
  EXPECT_EQ(options.iterations, 7U);
  EXPECT_EQ(options.warmup, 2U);
  EXPECT_EQ(options.caps.bytes, 10ULL << 20);
  EXPECT_DOUBLE_EQ(options.size_scale, 0.2);
  EXPECT_DOUBLE_EQ(options.compute_scale, 5);
  EXPECT_EQ(options.iterations_path, "/runs/x/iterations-{rank}.csv");
  EXPECT_EQ(options.start_at_realtime_ns, 1'764'000'000'000'000'000);
}

// Before any step runs, xtk-run checks the config against the step tools' own
// readers: what they would refuse fails once, naming the config and the step.
TEST(CommandLines, StepChecksRefuseWhatTheToolsWouldBeforeAnyStep) {
  const std::string base =
      "[training]\nbackend = \"gloo\"\nranks = 2\n"
      "[cross_traffic]\nprofiles = [\"burst\"]\nloads = [0.3]\n";
  const StepPlan step{"resnet50", "burst", 1, 0.3, "", 5};
  EXPECT_NO_THROW(check_step_commands(parse_experiment_config(base, "t.toml"), step));
  const auto refusal = [&](const std::string& more, const StepPlan& s) -> std::string {
    try {
      check_step_commands(parse_experiment_config(base + more, "t.toml"), s);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(refusal("burst_width = \"20ms\"\nburst_period = \"10ms\"\n", step)
                .rfind("t.toml: resnet50's burst step at 30 %: xtk-gen or xtk-log would refuse it: ", 0),
            0u);
  EXPECT_NE(refusal("cdf = \"no-such-cdf\"\n", step).find("no-such-cdf"), std::string::npos);
  EXPECT_NE(refusal("[capture]\ncounter_period = \"1us\"\n", step).find("--period"), std::string::npos);
  const StepPlan unknown{"no-such-model", "none", 0, 0, "", 1};
  EXPECT_NE(refusal("", unknown).find("xtk-collective train would refuse it"), std::string::npos)
      << refusal("", unknown);
}

// RDMA cross traffic: both ends get the transport and the device settings.
TEST(CommandLines, RdmaCrossTrafficCarriesItsDeviceSettings) {
  ::setenv("XTK_BIN_DIR", XTK_TOOLS_DIR "/xtk-server", 1);  // found, not run
  const auto config = parse_experiment_config(
      "[cross_traffic]\ntransport = \"rdma\"\nrdma_device = \"mlx5_0\"\ngid_index = 3\ntclass = 106\n", "t.toml");
  const auto server = to_options(parse<ServerFlags>(arguments_of(server_command(config, 7000)), on<ServerFlags>));
  EXPECT_EQ(server.transport, "rdma");
  EXPECT_EQ(server.device.device, "mlx5_0");
  EXPECT_EQ(server.device.gid_index, 3);
  ::setenv("XTK_BIN_DIR", XTK_TOOLS_DIR "/xtk-client", 1);
  const auto client = to_options(parse<ClientFlags>(
      arguments_of(client_command(config, "s.csv", "h1", "10.0.0.2", 7000, "r.csv", 1'764'000'000'000'000'000)),
      on<ClientFlags>));
  EXPECT_EQ(client.transport, "rdma");
  EXPECT_EQ(client.device.traffic_class, 106);
  ::unsetenv("XTK_BIN_DIR");
}

}  // namespace
}  // namespace xtk
