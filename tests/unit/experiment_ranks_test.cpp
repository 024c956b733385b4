// How xtk-run starts training ranks: the environment each gets (torchrun's
// variables, its GPU, NCCL confined to the testbed's NIC, the user's
// [training.env] last), the command for the emulator or a training script,
// and the check of NCCL's own report of its connections, on logs recorded
// from NCCL 2.28.9 on a 2xH100 host (tests/data/nccl): sockets over the veth,
// and P2P or SHM let on by [training.env].
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiment/commands.hpp"
#include "experiment/nccl_transport.hpp"

namespace xtk {
namespace {

std::string read(const std::string& name) {
  std::ifstream in(std::string(XTK_NCCL_LOGS) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << name;
  return text.str();
}

ExperimentConfig gpu_config(const std::string& extra = "") {
  return parse_experiment_config(
      "[training]\nbackend = \"nccl\"\nranks = 2\n" + extra + "\n[cross_traffic]\nloads = [0.0]\n", "t.toml");
}

StepPlan step() { return {"resnet50", "none", 0, 0.0, "", 1}; }

RankLaunch on_testbed(std::uint32_t rank) {
  RankLaunch l;
  l.rank = rank;
  l.master = "10.77.0.1:29501";
  l.start_realtime_ns = 1'764'000'000'000'000'000;
  l.iterations_path = "/runs/x/iterations-{rank}.csv";
  l.local_rank = rank;
  l.confine_to_interface = "eth0";
  l.host_id = "h" + std::to_string(rank);
  return l;
}

bool has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// The value `env` would give NAME: the last NAME= wins.
std::string value_of(const std::vector<std::string>& env, const std::string& name) {
  std::string value = "(unset)";
  for (const auto& e : env) {
    if (e.rfind(name + "=", 0) == 0) value = e.substr(name.size() + 1);
  }
  return value;
}

TEST(RankEnvironment, NcclRanksOnOneHostGetTheirGpuAndOnlyTheVeth) {
  const auto env = rank_environment(gpu_config(), step(), on_testbed(1));
  for (const char* e : {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=10.77.0.1", "MASTER_PORT=29501",
                        "NCCL_SOCKET_IFNAME=eth0", "NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_IB_DISABLE=1",
                        "NCCL_NVLS_ENABLE=0", "NCCL_DEBUG=INFO"}) {
    EXPECT_TRUE(has(env, e)) << e;
  }
  EXPECT_EQ(value_of(env, "CUDA_VISIBLE_DEVICES"), "(unset)");
  EXPECT_EQ(value_of(env, "XTK_ITERATIONS_FILE"), "(unset)") << "the emulator takes -o";
  EXPECT_EQ(value_of(env, "NCCL_HOSTID"), "h1") << "each namespace is its own node to NCCL";
}

TEST(RankEnvironment, RanksSharingAGpuStandForTwoHosts) {
  const auto c = gpu_config("gpus = [0, 0]");
  const auto first = rank_environment(c, step(), on_testbed(0));
  const auto second = rank_environment(c, step(), on_testbed(1));
  EXPECT_EQ(value_of(first, "CUDA_VISIBLE_DEVICES"), "0");
  EXPECT_EQ(value_of(second, "CUDA_VISIBLE_DEVICES"), "0");
  // NCCL refuses two ranks of one host on one GPU: different host ids let it.
  EXPECT_NE(value_of(first, "NCCL_HOSTID"), value_of(second, "NCCL_HOSTID"));
}

TEST(RankEnvironment, BetweenHostsNcclKeepsTheUsersNetworkSettings) {
  RankLaunch l = on_testbed(1);
  l.local_rank = 0;
  l.confine_to_interface.clear();
  l.host_id.clear();
  const auto env = rank_environment(gpu_config(), step(), l);
  EXPECT_EQ(value_of(env, "NCCL_SOCKET_IFNAME"), "(unset)");
  EXPECT_EQ(value_of(env, "NCCL_HOSTID"), "(unset)") << "real hosts are NCCL's own";
  EXPECT_EQ(value_of(env, "NCCL_IB_DISABLE"), "(unset)");
  EXPECT_EQ(value_of(env, "NCCL_NVLS_ENABLE"), "0");
  EXPECT_EQ(value_of(env, "LOCAL_RANK"), "0");
}

TEST(RankEnvironment, GpusListPicksEachLocalRanksGpu) {
  const auto c = gpu_config("gpus = [3, 1]");
  EXPECT_EQ(value_of(rank_environment(c, step(), on_testbed(0)), "CUDA_VISIBLE_DEVICES"), "3");
  EXPECT_EQ(value_of(rank_environment(c, step(), on_testbed(1)), "CUDA_VISIBLE_DEVICES"), "1");
}

TEST(RankEnvironment, TrainingEnvComesLastAndWins) {
  const auto c = gpu_config("[training.env]\nNCCL_P2P_DISABLE = \"0\"\nNCCL_ALGO = \"Ring\"");
  const auto env = rank_environment(c, step(), on_testbed(0));
  EXPECT_EQ(value_of(env, "NCCL_P2P_DISABLE"), "0");
  EXPECT_EQ(value_of(env, "NCCL_ALGO"), "Ring");
  const auto ours = std::find(env.begin(), env.end(), "NCCL_P2P_DISABLE=1");
  ASSERT_NE(ours, env.end());
  EXPECT_LT(ours - env.begin(), std::find(env.begin(), env.end(), "NCCL_ALGO=Ring") - env.begin());
}

TEST(RankEnvironment, GlooRanksOnOneHostNameTheirInterface) {
  const auto c = parse_experiment_config("[training]\nranks = 2\n", "t.toml");
  const auto env = rank_environment(c, step(), on_testbed(0));
  EXPECT_EQ(value_of(env, "GLOO_SOCKET_IFNAME"), "eth0");
  EXPECT_EQ(value_of(env, "NCCL_DEBUG"), "(unset)");
}

TEST(TrainingCommand, EmulatorRunsUnderTheEnvironment) {
  ::setenv("XTK_BIN_DIR", std::filesystem::path(XTK_COLLECTIVE_BIN).parent_path().c_str(), 1);
  const auto argv = training_command(gpu_config(), step(), on_testbed(1));
  ASSERT_GT(argv.size(), 3u);
  EXPECT_EQ(argv[0], "env");
  EXPECT_TRUE(has(argv, "NCCL_SOCKET_IFNAME=eth0"));
  const auto train = std::find(argv.begin(), argv.end(), "train");
  ASSERT_NE(train, argv.end());
  EXPECT_NE((train - 5)->find("xtk-collective"), std::string::npos) << *(train - 5);
  EXPECT_FALSE(has(argv, "--compute-mode")) << "GPU ranks compute on the GPU";
  EXPECT_TRUE(has(argv, "/runs/x/iterations-{rank}.csv"));
}

TEST(TrainingCommand, ScriptRunsThroughShWithItsXtkVariables) {
  const auto c = gpu_config("command = \"python3 train.py --batch 64\"\niterations = 7\nwarmup = 2");
  const auto argv = training_command(c, step(), on_testbed(1));
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv[argv.size() - 3], "/bin/sh");
  EXPECT_EQ(argv[argv.size() - 2], "-c");
  EXPECT_EQ(argv.back(), "python3 train.py --batch 64");
  for (const char* e : {"XTK_ITERATIONS_FILE=/runs/x/iterations-1.csv", "XTK_ITERATIONS=7", "XTK_WARMUP=2",
                        "XTK_START_AT=1764000000.000000", "XTK_MODEL=resnet50", "XTK_BACKEND=nccl", "RANK=1"}) {
    EXPECT_TRUE(has(argv, e)) << e;
  }
}

TEST(TrainingStartup, DependsOnWhatStarts) {
  EXPECT_EQ(training_startup_ns(parse_experiment_config("", "t.toml")), 3'000'000'000);
  EXPECT_EQ(training_startup_ns(gpu_config()), 10'000'000'000);
  EXPECT_EQ(training_startup_ns(gpu_config("command = \"x\"")), 30'000'000'000);
  EXPECT_EQ(training_startup_ns(gpu_config("command = \"x\"\nstartup = \"4s\"")), 4'000'000'000);
}

TEST(NcclTransport, SocketsOverTheVethPass) {
  const auto log = read("socket.log");
  const auto connections = parse_nccl_connections(log);
  ASSERT_EQ(connections.size(), 4u);
  for (const auto& c : connections) EXPECT_EQ(c.via, "NET/Socket/0");
  EXPECT_EQ(connections[0].from, 1u);
  EXPECT_EQ(connections[0].to, 0u);
  EXPECT_EQ(nccl_bypass(log, "rank 0", "NET/Socket"), std::nullopt);
}

TEST(NcclTransport, NvlinkAndSharedMemoryFail) {
  for (const auto& [file, via] : {std::pair{"p2p-ipc.log", "via P2P/IPC"}, std::pair{"p2p-cumem.log", "via P2P/CUMEM"},
                                  std::pair{"shm.log", "via SHM/direct/direct"}}) {
    const auto why = nccl_bypass(read(file), "rank 0 on h0", "NET/Socket");
    ASSERT_TRUE(why) << file;
    EXPECT_NE(why->find("rank 0 on h0: NCCL connects rank 0 to rank 1 " + std::string(via)), std::string::npos) << *why;
  }
}

TEST(NcclTransport, NoConnectionLinesProveNothing) {
  const std::string log = "vm:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\nxtk-collective: iteration 0\n";
  const auto why = nccl_bypass(log, "rank 1", "NET/Socket");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("NCCL_DEBUG=INFO"), std::string::npos) << *why;
  EXPECT_EQ(nccl_bypass(log, "rank 1", "NET/Socket", /*connections_required=*/false), std::nullopt);
}

TEST(NcclTransport, OlderRingLinesAndInfinibandBetweenHosts) {
  const std::string log =
      "ip-1:45305:45310 [0] NCCL INFO Ring 00 : 43 -> 44 [receive] via NET/Socket/0\n"
      "node:9:9 [7] NCCL INFO Channel 03/0 : 47[7] -> 39[7] [receive] via NET/IBext_v8/2\n"
      "not nccl: Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n";
  const auto connections = parse_nccl_connections(log);
  ASSERT_EQ(connections.size(), 2u);
  EXPECT_EQ(connections[0].from, 43u);
  EXPECT_EQ(connections[1].via, "NET/IBext_v8/2");
  EXPECT_EQ(nccl_bypass(log, "rank 0", "NET/"), std::nullopt);
  EXPECT_TRUE(nccl_bypass(log, "rank 0", "NET/Socket"));
}

}  // namespace
}  // namespace xtk
