#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/run_dir.hpp"
#include "core/error.hpp"
#include "experiment/config.hpp"
#include "experiment/hosts_file.hpp"
#include "experiment/plan.hpp"

namespace xtk {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_experiment_config(text, "e.toml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(ExperimentConfig, DefaultsAndValues) {
  const auto c = parse_experiment_config(
      "[experiment]\nname = \"seed-b\"\nlink = \"25G\"\nconfiguration = \"A\"\n"
      "[training]\nmodels = [\"resnet50\", \"vgg16\"]\nranks = 4\n"
      "[cross_traffic]\nprofiles = [\"burst\"]\nloads = [0, 0.5, 0.9]\nwarmup = \"2s\"\n",
      "e.toml");
  EXPECT_EQ(c.name, "seed-b");
  EXPECT_EQ(c.out, "runs/seed-b");
  EXPECT_DOUBLE_EQ(c.link_bps, 25e9);
  EXPECT_EQ(c.configuration, Configuration::A);
  EXPECT_EQ(c.training.models.size(), 2u);
  EXPECT_EQ(c.training.ranks, 4u);
  EXPECT_EQ(c.cross_traffic.warmup_ns, 2'000'000'000);
  EXPECT_EQ(c.executor, ExecutorKind::netns);
}

TEST(ExperimentConfig, ErrorsNameTheLine) {
  EXPECT_EQ(error_of("[experiment]\nlink = \"fast\"\n"),
            "e.toml:2: 'link': 'fast' is not a rate: it must start with a number");
  EXPECT_EQ(error_of("[experiment]\nexecutor = \"k8s\"\n"), "e.toml:2: executor 'k8s': use netns, slurm or hosts");
  EXPECT_EQ(error_of("[training]\nranks = 1\n"), "e.toml:2: 'ranks' must be at least 2 (an all-reduce needs peers)");
  EXPECT_EQ(error_of("[training]\nrank = 3\n"), "e.toml:2: [training] has no key 'rank'");
  EXPECT_EQ(error_of("[cross_traffic]\nloads = [0.5, 3]\n"), "e.toml:2: load 3 is not a share of the link (0 to 1.5)");
  EXPECT_EQ(error_of("[cross_traffic]\nloads = [0.5, nan]\n"),
            "e.toml:2: load nan is not a share of the link (0 to 1.5)");
  EXPECT_EQ(error_of("[cross_traffic]\nloads = [0.3, 0.6, 0.3]\n"),
            "e.toml:2: load 0.3 is listed twice: each step once");
  EXPECT_EQ(error_of("[cross_traffic]\nprofiles = [\"burst\", \"burst\"]\n"),
            "e.toml:2: profile 'burst' is listed twice: each series once");
  EXPECT_EQ(error_of("[training]\ncompute_scale = -1.0\n"), "e.toml:2: 'compute_scale' must be a number above 0");
  EXPECT_EQ(error_of("[training]\ntimeout = \"0s\"\n"), "e.toml:2: 'timeout' must be above 0");
  EXPECT_EQ(error_of("[experiment]\nstep_timeout = \"0s\"\n"), "e.toml:2: 'step_timeout' must be above 0");
  // An empty file does not run the default sweep.
  const auto empty = std::filesystem::temp_directory_path() / fmt::format("xtk-empty-{}.toml", ::getpid());
  std::ofstream(empty) << "# nothing yet\n\n";
  try {
    load_experiment_config(empty.string());
    ADD_FAILURE() << "an empty config loaded";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              empty.string() + ": the config is empty: give at least [experiment] name = \"...\"");
  }
  std::filesystem::remove(empty);
  EXPECT_EQ(error_of("[cross_traffic]\ntransport = \"udp\"\n"), "e.toml:2: transport 'udp': use tcp or rdma");
  EXPECT_EQ(error_of("[cross_traffic]\ntransport = \"rdma\"\noutstanding = 0\n"),
            "e.toml:3: 'outstanding': from 1 to 4096");
  EXPECT_EQ(error_of("[cross_traffic]\nprofiles = [\"bursty\"]\n"),
            "e.toml:2: profile 'bursty': use consistent, burst or long-lived");
  EXPECT_EQ(error_of("[experiment]\nemulate_link = \"25G\"\nemulation = \"space\"\n"),
            "e.toml:3: emulation 'space': use bytes, time or both");
  EXPECT_EQ(error_of("[experiment]\nemulation = \"time\"\n"),
            "e.toml:2: 'emulation' needs 'emulate_link', the emulated cluster's link rate");
  EXPECT_EQ(error_of("[experiment]\nemulate_link = \"0\"\n"), "e.toml:2: 'emulate_link' must be above 0");
  // Found by fuzz_experiment_config: an absurd ratio overflowed the buffer's conversion.
  EXPECT_EQ(error_of("[experiment]\nlink = \"29G\"\nemulate_link = \"2555555555555555555555555555555551\"\n"
                     "bottleneck_buffer = \"16MB\"\n"),
            "e.toml:3: 'emulate_link' is 8.81e+22 times 'link': emulate a cluster within 10000 times the testbed's "
            "link either way");
  EXPECT_EQ(error_of("[experiment]\nlink = \"1G\"\nemulate_link = \"25G\"\nbottleneck_buffer = \"100TB\"\n"),
            "e.toml:4: 'bottleneck_buffer' is more than the testbed's queue can hold (4 GiB on the testbed)");
  EXPECT_EQ(error_of("[experiments]\n"), "e.toml:1: unknown table or key 'experiments'");
  EXPECT_NE(error_of("[experiment\n").find("e.toml:1:"), std::string::npos);
  EXPECT_EQ(error_of("[experiment]\nexecutor = \"hosts\"\n"),
            "e.toml: executor 'hosts' needs [hosts] file = \"hosts.txt\"");
}

// bottleneck_buffer is the emulated cluster's: on the testbed it scales as
// flow sizes do (docs/experiments.md).
TEST(ExperimentConfig, BottleneckBufferScalesAsBytesDo) {
  const auto buffer_on_testbed = [](const std::string& experiment) {
    return parse_experiment_config("[experiment]\n" + experiment, "e.toml").testbed_buffer_bytes();
  };
  EXPECT_EQ(buffer_on_testbed(""), 0u);  // the qdisc's own queue
  EXPECT_EQ(buffer_on_testbed("bottleneck_buffer = \"1MB\"\n"), 1'000'000u);
  EXPECT_EQ(buffer_on_testbed("bottleneck_buffer = \"4MB\"\nemulate_link = \"25G\"\n"), 800'000u);  // x 0.2
  EXPECT_EQ(buffer_on_testbed("bottleneck_buffer = \"4MB\"\nemulate_link = \"25G\"\nemulation = \"bytes\"\n"),
            160'000u);  // x 0.04
  EXPECT_EQ(buffer_on_testbed("bottleneck_buffer = \"4MB\"\nemulate_link = \"25G\"\nemulation = \"time\"\n"),
            4'000'000u);
  EXPECT_EQ(error_of("[experiment]\nbottleneck_buffer = \"3MB\"\nemulate_link = \"25G\"\nemulation = \"bytes\"\n"),
            "e.toml:2: 'bottleneck_buffer' is 120000 bytes on the testbed, less than two of its largest packets "
            "(131100 bytes): give at least 3277500 bytes of the emulated cluster");
  EXPECT_EQ(error_of("[experiment]\nbottleneck_buffer = \"deep\"\n"),
            "e.toml:2: 'bottleneck_buffer': 'deep' is not a size: it must start with a number");
  EXPECT_EQ(error_of("[experiment]\nexecutor = \"slurm\"\nbottleneck_buffer = \"4MB\"\n"),
            "e.toml:3: 'bottleneck_buffer' sets the netns testbed's queue: a real switch's buffer is its own");
}

TEST(ExperimentConfig, CongestionControlIsTheTestbedHostsDefault) {
  EXPECT_EQ(parse_experiment_config("[experiment]\n", "e.toml").congestion_control, "");  // the machine's
  EXPECT_EQ(parse_experiment_config("[experiment]\ncongestion_control = \"cubic\"\n", "e.toml").congestion_control,
            "cubic");
  EXPECT_EQ(error_of("[experiment]\ncongestion_control = \"CUBIC\"\n"),
            "e.toml:2: 'congestion_control' 'CUBIC' is not a congestion control name (lower-case letters, digits, "
            "'_'; at most 15), e.g. cubic");
  EXPECT_EQ(error_of("[experiment]\ncongestion_control = \"\"\n"),
            "e.toml:2: 'congestion_control' '' is not a congestion control name (lower-case letters, digits, '_'; at "
            "most 15), e.g. cubic");
  EXPECT_EQ(error_of("[experiment]\nexecutor = \"slurm\"\ncongestion_control = \"cubic\"\n"),
            "e.toml:3: 'congestion_control' sets the netns testbed hosts' default: a real host's is its own "
            "net.ipv4.tcp_congestion_control");
}

// The netns testbed's own keys: refused beside another executor in the file;
// with another executor from --executor, left out and said, so that a shipped
// testbed config runs on a cluster as it stands.
TEST(ExperimentConfig, TestbedKeysUnderAnotherExecutorFromTheCommandLine) {
  const std::string text =
      "[experiment]\nlink = \"1G\"\nbottleneck_buffer = \"4MB\"\ncongestion_control = \"cubic\"\n"
      "tcp_rto_min = \"40ms\"\n";
  const auto netns = parse_experiment_config(text, "e.toml");
  EXPECT_EQ(netns.congestion_control, "cubic");
  EXPECT_TRUE(netns.notes.empty());
  const auto slurm = parse_experiment_config(text, "e.toml", ExecutorKind::slurm);
  EXPECT_EQ(slurm.executor, ExecutorKind::slurm);
  EXPECT_EQ(slurm.bottleneck_buffer_bytes, 0u);
  EXPECT_EQ(slurm.congestion_control, "");
  EXPECT_EQ(slurm.tcp_rto_min_ns, ExperimentConfig{}.tcp_rto_min_ns);
  ASSERT_EQ(slurm.notes.size(), 3u);
  EXPECT_EQ(slurm.notes[0],
            "e.toml:3: 'bottleneck_buffer' sets the netns testbed's queue: a real switch's buffer is its own: left out "
            "on the slurm executor (--executor)");
  EXPECT_EQ(slurm.notes[1].rfind("e.toml:4: 'congestion_control'", 0), 0u) << slurm.notes[1];
  EXPECT_EQ(slurm.notes[2].rfind("e.toml:5: 'tcp_rto_min'", 0), 0u) << slurm.notes[2];
  // --executor netns over a file that says slurm: the keys count again.
  const auto back =
      parse_experiment_config("[experiment]\nexecutor = \"slurm\"\n" + text.substr(13), "e.toml", ExecutorKind::netns);
  EXPECT_EQ(back.congestion_control, "cubic");
  EXPECT_TRUE(back.notes.empty());
}

// tcp_rto_min is the emulated cluster's; the testbed's routes get it times
// the emulation's time scale, and Linux's 200 ms is dilated when not given.
TEST(ExperimentConfig, TcpRtoMinIsDilatedAsEveryOtherTime) {
  EXPECT_EQ(parse_experiment_config("[experiment]\n", "e.toml").testbed_rto_min_ms(), 0u);  // the kernel's
  EXPECT_EQ(parse_experiment_config("[experiment]\ntcp_rto_min = \"5ms\"\n", "e.toml").testbed_rto_min_ms(), 5u);
  const std::string both = "[experiment]\nlink = \"1G\"\nemulate_link = \"25G\"\n";  // time x5
  EXPECT_EQ(parse_experiment_config(both, "e.toml").testbed_rto_min_ms(), 1000u);
  EXPECT_EQ(parse_experiment_config(both + "tcp_rto_min = \"40ms\"\n", "e.toml").testbed_rto_min_ms(), 200u);
  EXPECT_EQ(parse_experiment_config(both + "emulation = \"bytes\"\n", "e.toml").testbed_rto_min_ms(), 0u);
  EXPECT_EQ(parse_experiment_config(both + "emulation = \"time\"\n", "e.toml").testbed_rto_min_ms(), 5000u);
  EXPECT_EQ(error_of("[experiment]\ntcp_rto_min = \"0s\"\n"),
            "e.toml:2: 'tcp_rto_min' must be 1ms to 120s (Linux's is 200ms)");
  EXPECT_EQ(error_of("[experiment]\nexecutor = \"slurm\"\ntcp_rto_min = \"1s\"\n"),
            "e.toml:3: 'tcp_rto_min' sets the netns testbed hosts' routes: a real host's is its own (ip route ... "
            "rto_min)");
}

TEST(ExperimentConfig, GpuRanksAndTrainingScripts) {
  const auto c = parse_experiment_config(
      "[training]\nbackend = \"nccl\"\nranks = 2\ngpus = [2, 3]\nstartup = \"20s\"\n"
      "command = \"python3 train.py\"\n[training.env]\nNCCL_ALGO = \"Ring\"\nTORCH_NCCL_ASYNC = \"1\"\n",
      "e.toml");
  EXPECT_EQ(c.training.gpus, (std::vector<std::uint32_t>{2, 3}));
  EXPECT_EQ(c.training.command, "python3 train.py");
  EXPECT_EQ(c.training.startup_ns, 20'000'000'000);
  ASSERT_EQ(c.training.env.size(), 2u);
  EXPECT_EQ(c.training.env[0], (std::pair<std::string, std::string>{"NCCL_ALGO", "Ring"}));
}

TEST(ExperimentConfig, GpuAndScriptErrorsNameTheLine) {
  EXPECT_EQ(error_of("[training]\nranks = 3\ngpus = [0, 1]\n"),
            "e.toml:3: 'gpus' lists 2 GPUs for 3 ranks on one host: give one per rank (ranks may share one: [0, 0])");
  EXPECT_EQ(error_of("[training]\ngpus = [0, -1]\n"),
            "e.toml:2: each of 'gpus' must be a whole number from 0 to 4294967295");
  // Found by fuzz_experiment_config: a whole number a double cannot hold exactly, and one past 32 bits.
  EXPECT_EQ(error_of("[cross_traffic]\nloads = [0, 1, 555555555555555550]\n"),
            "e.toml:2: load 5.555555555555555e+17 is not a share of the link (0 to 1.5)");
  EXPECT_EQ(error_of("[training]\nranks = 4294967298\n"),
            "e.toml:2: 'ranks' must be a whole number from 0 to 4294967295");
  EXPECT_EQ(error_of("[training]\ncommand = \"  \"\n"),
            "e.toml:2: 'command' is empty: give the training script's command line, or leave it out");
  EXPECT_EQ(error_of("[training]\nbackend = \"mpi\"\n"), "e.toml:2: backend 'mpi': use gloo or nccl");
  EXPECT_EQ(error_of("[training]\ngloo_connections = 0\n"), "e.toml:2: 'gloo_connections' must be 1 to 64");
  EXPECT_EQ(error_of("[training]\nbackend = \"nccl\"\ngloo_connections = 4\n"),
            "e.toml:3: 'gloo_connections' is Gloo's: NCCL's are set with [training.env] NCCL_SOCKET_NTHREADS and "
            "NCCL_NSOCKS_PERTHREAD");
  EXPECT_EQ(error_of("[training.env]\n\"1X\" = \"a\"\n"), "e.toml:2: 'env': '1X' is not an environment variable name");
  EXPECT_EQ(error_of("[training.env]\nNCCL_DEBUG = 1\n"), "e.toml:2: 'env': NCCL_DEBUG must be a string");
  EXPECT_EQ(error_of("[training]\ncommand = \"x\"\nreplay = \"et.json\"\n"),
            "e.toml:3: 'replay' and 'command' both replace the emulator: give one of them");
  EXPECT_EQ(error_of("[training]\nkineto = \"k.json\"\n"),
            "e.toml:2: 'kineto' is the compute of a 'replay' trace: give 'replay' too");
}

TEST(ExperimentPlan, OneBaselinePerModelThenEveryProfileAndLoad) {
  auto c = parse_experiment_config("[training]\nmodel = \"" XTK_TINY_MODEL
                                   "\"\n[cross_traffic]\nprofiles = [\"consistent\", \"burst\"]\nloads = [0, 0.3, "
                                   "0.6]\n",
                                   "e.toml");
  const auto steps = plan_steps(c, "exp");
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0].dir, "exp/tiny-mlp/none/step00");
  EXPECT_EQ(steps[4].dir, "exp/tiny-mlp/burst/step02");
  EXPECT_DOUBLE_EQ(steps[4].load_share, 0.6);
  const auto totals = read_model_totals(XTK_TINY_MODEL);
  EXPECT_EQ(totals.name, "tiny-mlp");
  EXPECT_DOUBLE_EQ(totals.params, 1579530);
  EXPECT_DOUBLE_EQ(totals.bytes_per_param, 4);
  EXPECT_DOUBLE_EQ(totals.compute_ms, 60);
  // Seeds follow the plan from the config's; repetitions go on counting, so
  // each draws new schedules.
  for (std::size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].seed, 1 + i);
  c.repetitions = 2;
  const auto twice = plan_steps(c, "exp");
  ASSERT_EQ(twice.size(), 10u);
  EXPECT_EQ(twice[0].dir, "exp/rep1/tiny-mlp/none/step00");
  EXPECT_EQ(twice[9].dir, "exp/rep2/tiny-mlp/burst/step02");
  EXPECT_EQ(twice[4].seed, 5u);
  EXPECT_EQ(twice[9].seed, 10u);
  EXPECT_EQ(twice[4].repetition, 1u);
  EXPECT_EQ(twice[5].repetition, 2u);
  // Another config seed draws from a block of its own: no step of seed 2
  // replays a step of seed 1 (or of seed 3), whatever the plan's length.
  c.seed = 2;
  const auto other = plan_steps(c, "exp");
  EXPECT_EQ(other[0].seed, (std::uint64_t{1} << 32) + 2);
  EXPECT_EQ(other[9].seed, (std::uint64_t{1} << 32) + 11);
  c.seed = 3;
  EXPECT_EQ(plan_steps(c, "exp")[0].seed, (std::uint64_t{2} << 32) + 3);
}

// Resuming keeps a step only for the config that planned it: the config's
// measuring keys must be the same (the earlier experiment.toml against the
// new), and each step's record must hold its plan's model, profile, load and seed.
TEST(ExperimentPlan, ResumeKeepsOnlyStepsOfThisPlan) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("xtk_resume_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream((dir / name).string()) << text;
    return (dir / name).string();
  };
  const std::string base =
      write("a.toml",
            "# the run\n[experiment]\nlink = \"1G\"\nseed = 1\nstep_timeout = \"60s\"\n"
            "[training]\nmodel = \"" XTK_TINY_MODEL "\"\n[cross_traffic]\nloads = [0, 0.3]\nprofiles = [\"burst\"]\n");
  // Comments, order, and the keys that choose steps or bound their time: no change.
  const std::string same = write("b.toml",
                                 "[cross_traffic]\nprofiles = [\"burst\", \"consistent\"]\nloads = [0, 0.3, 0.6]\n"
                                 "[experiment]\nseed = 1\nstep_timeout = \"2h\"\nlink = \"1G\"\n"
                                 "[training]\nmodel = \"" XTK_TINY_MODEL "\"\n");
  EXPECT_EQ(config_changes(base, same), std::vector<std::string>{});
  const std::string other =
      write("c.toml", "[experiment]\nlink = \"10G\"\nseed = 2\n[training]\nmodel = \"" XTK_TINY_MODEL
                      "\"\niterations = 20\n[cross_traffic]\nloads = [0, 0.3]\n");
  EXPECT_EQ(config_changes(base, other),
            (std::vector<std::string>{"[experiment] link was '1G', is '10G'", "[experiment] seed was 1, is 2",
                                      "[training] iterations was absent, is 20"}));
  EXPECT_THROW(config_changes(write("bad.toml", "[experiment\n"), base), InputError);

  auto config = load_experiment_config(base);
  const auto steps = plan_steps(config, (dir / "exp").string());
  ASSERT_EQ(steps.size(), 2u);
  const StepPlan& step = steps[1];
  EXPECT_EQ(rerun_reason(step), std::string()) << "never run";
  fs::create_directories(step.dir);
  std::ofstream(step.dir + "/iterations-0.csv") << "";
  // Written as xtk-run writes it: through analysis' run.json writer.
  analysis::StepInfo info;
  info.dir = step.dir;
  info.model = "tiny-mlp";
  info.ranks = 1;
  info.profile = "burst";
  info.load_bps = 0.3e9;
  info.link_bps = 1e9;
  info.bottleneck.link_bps = 1e9;
  info.iterations = {step.dir + "/iterations-0.csv"};
  info.plan.model_profile = step.model;
  info.plan.load_share = 0.3;
  info.plan.seed = step.seed;
  const auto record = [&](const analysis::StepInfo& i) {
    std::ofstream(step.dir + "/run.json") << analysis::run_json_object(i).dump(2);
  };
  record(info);
  EXPECT_EQ(rerun_reason(step), std::nullopt);
  info.failed = true;
  record(info);
  EXPECT_EQ(rerun_reason(step), std::string());
  info.failed = false;
  info.plan.seed = step.seed + 7;
  record(info);
  EXPECT_EQ(rerun_reason(step),
            fmt::format("its schedule drew seed {}, this plan's draws {}", step.seed + 7, step.seed));
  info.plan.seed = step.seed;
  info.plan.load_share = 0.6;
  record(info);
  EXPECT_EQ(rerun_reason(step), "its record is of " + step.model + " burst at 60 % of the link, this plan's of " +
                                    step.model + " burst at 30 %");
  info.plan.load_share = 0.3;
  info.plan.executor = "hosts";  // xtk-run --executor hosts, the same config
  record(info);
  EXPECT_EQ(rerun_reason(step), "it ran on executor hosts, this plan's runs on netns");
  info.plan.executor = "netns";
  record(info);
  EXPECT_EQ(rerun_reason(step), std::nullopt);
  info.plan.executor.clear();
  info.plan.seed.reset();  // an older build's record: taken as planned
  record(info);
  EXPECT_EQ(rerun_reason(step), std::nullopt);
  // A record analysis refuses is no result: the step runs again, and says why.
  fs::remove(step.dir + "/iterations-0.csv");
  const auto why = rerun_reason(step);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("analysis cannot read its record: " + step.dir + "/run.json:"), std::string::npos) << *why;
  EXPECT_NE(why->find("iterations-0.csv does not exist"), std::string::npos) << *why;
  fs::remove_all(dir);
}

TEST(HostsFile, NamesAddressesAndInterfacesInRankOrder) {
  std::istringstream in(
      "# name address interface\n"
      "gpu0  10.0.0.11  ens1f0\n"
      "\n"
      "gpu1\t10.0.0.12   # the interface is eth0 by default\n"
      "xt node3.example.org ib0\r\n");
  const auto hosts = parse_hosts_file(in, "hosts.txt");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "gpu0");
  EXPECT_EQ(hosts[0].address, "10.0.0.11");
  EXPECT_EQ(hosts[0].interface, "ens1f0");
  EXPECT_EQ(hosts[1].address, "10.0.0.12");
  EXPECT_EQ(hosts[1].interface, "eth0");
  EXPECT_EQ(hosts[2].name, "xt");
  EXPECT_EQ(hosts[2].interface, "ib0");
}

TEST(HostsFile, ErrorsNameTheLine) {
  const auto error_of = [](const std::string& text) -> std::string {
    std::istringstream in(text);
    try {
      parse_hosts_file(in, "hosts.txt");
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_EQ(error_of("h0 10.0.0.1\nh1\n"), "hosts.txt:2: expected 'name address [interface]'");
  EXPECT_EQ(error_of("h0 10.0.0.1 eth0 extra\n"),
            "hosts.txt:1: expected 'name address [interface]', found a fourth field 'extra'");
  EXPECT_EQ(error_of("h0 10.0.0.1\n# h1\nh0 10.0.0.2\n"), "hosts.txt:3: host 'h0' is listed twice");
  EXPECT_EQ(error_of("a,b 10.0.0.1\n"), "hosts.txt:1: host name 'a,b' has a ','");
  EXPECT_EQ(error_of("h0 -oProxyCommand=x\n"),
            "hosts.txt:1: address '-oProxyCommand=x' begins with '-': ssh would read it as an option");
  EXPECT_EQ(error_of("h0 10.0.0.1 a-very-long-interface\n"),
            "hosts.txt:1: interface 'a-very-long-interface' is not a network device's name (1 to 15 characters, "
            "no '/' or ':')");
  EXPECT_EQ(error_of("h0 10.0.0.1 eth0:1\n"),
            "hosts.txt:1: interface 'eth0:1' is not a network device's name (1 to 15 characters, no '/' or ':')");
  EXPECT_EQ(error_of("h0 10.0.0.1 ..\n"),
            "hosts.txt:1: interface '..' is not a network device's name (1 to 15 characters, no '/' or ':')");
  try {
    read_hosts_file("/nonexistent/hosts.txt");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/hosts.txt: cannot open the hosts file");
  }
}

// Every config shipped in configs/experiments loads and plans its steps: a
// key renamed in the reader, or a model profile renamed, fails here rather
// than at a user's first run.
TEST(ExperimentConfig, ShippedConfigsLoadAndPlan) {
  std::size_t configs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(XTK_CONFIG_DIR) + "/experiments")) {
    if (entry.path().extension() != ".toml") continue;
    ++configs;
    const std::string path = entry.path().string();
    SCOPED_TRACE(path);
    ExperimentConfig c;
    ASSERT_NO_THROW(c = load_experiment_config(path));
    const auto steps = plan_steps(c, "exp");
    EXPECT_EQ(steps.size(),
              c.training.models.size() *
                  (1 + c.cross_traffic.profiles.size() * static_cast<std::size_t>(std::count_if(
                                                             c.cross_traffic.loads.begin(), c.cross_traffic.loads.end(),
                                                             [](double load) { return load > 0; }))));
  }
  EXPECT_GE(configs, 5u);
}

// The reference block of docs/experiments.md is what users copy from: it
// loads as written, with every key it shows.
TEST(ExperimentConfig, TheDocsReferenceBlockLoads) {
  std::ifstream docs(XTK_DOCS_DIR "/experiments.md");
  ASSERT_TRUE(docs) << XTK_DOCS_DIR "/experiments.md";
  std::string line, block;
  bool in_section = false, in_block = false;
  while (std::getline(docs, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Config reference";
    if (!in_section) continue;
    if (line == "```toml") {
      in_block = true;
    } else if (in_block && line == "```") {
      break;
    } else if (in_block) {
      block += line + "\n";
    }
  }
  ASSERT_NE(block.find("[experiment]"), std::string::npos) << "no toml block under '## Config reference'";
  ExperimentConfig c;
  ASSERT_NO_THROW(c = parse_experiment_config(block, "docs/experiments.md")) << block;
  EXPECT_EQ(c.name, "demo");
  EXPECT_FALSE(plan_steps(c, "exp").empty());
}

}  // namespace xtk
