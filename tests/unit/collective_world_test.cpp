// Where a process finds its rank: flags, torchrun's and Slurm's environment,
// and Slurm's compressed node lists.
#include <gtest/gtest.h>

#include <map>

#include "collective/world.hpp"
#include "core/error.hpp"

namespace xtk::collective {
namespace {

World from(const std::map<std::string, std::string>& env, const WorldFlags& flags = {}) {
  return resolve_world(flags, [&](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

TEST(CollectiveWorld, DefaultsToOneProcessOnLoopback) {
  const auto w = from({});
  EXPECT_EQ(w.rank, 0u);
  EXPECT_EQ(w.world_size, 1u);
  EXPECT_EQ(w.master_host, "127.0.0.1");
  EXPECT_EQ(w.master_port, 29500);
}

TEST(CollectiveWorld, TorchrunEnvironment) {
  const auto w = from(
      {{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29400"}});
  EXPECT_EQ(w.rank, 3u);
  EXPECT_EQ(w.world_size, 8u);
  EXPECT_EQ(w.local_rank, 1u);
  EXPECT_EQ(w.master_host, "node7");
  EXPECT_EQ(w.master_port, 29400);
  EXPECT_NE(w.source.find("torchrun"), std::string::npos);
}

TEST(CollectiveWorld, UnderTorchrunsAgentStoreTheNextPort) {
  const auto w =
      from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "29500"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  EXPECT_EQ(w.master_port, 29501);
}

TEST(CollectiveWorld, SlurmEnvironmentAndFirstNodeOfTheStep) {
  const auto w = from({{"SLURM_PROCID", "5"},
                       {"SLURM_NTASKS", "8"},
                       {"SLURM_LOCALID", "1"},
                       {"SLURM_JOB_ID", "123456"},
                       {"SLURM_JOB_NODELIST", "gpu[01-04]"},
                       {"SLURM_STEP_NODELIST", "gpu[03-04]"}});
  EXPECT_EQ(w.rank, 5u);
  EXPECT_EQ(w.world_size, 8u);
  EXPECT_EQ(w.local_rank, 1u);
  EXPECT_EQ(w.master_host, "gpu03");
  EXPECT_EQ(w.master_port, 20000 + 123456 % 10000);
  EXPECT_NE(w.source.find("Slurm"), std::string::npos);
}

TEST(CollectiveWorld, MasterAddrBeatsTheNodeList) {
  const auto w = from({{"SLURM_PROCID", "0"},
                       {"SLURM_NTASKS", "2"},
                       {"SLURM_JOB_NODELIST", "a,b"},
                       {"MASTER_ADDR", "10.0.0.9"},
                       {"MASTER_PORT", "4000"}});
  EXPECT_EQ(w.master_host, "10.0.0.9");
  EXPECT_EQ(w.master_port, 4000);
}

TEST(CollectiveWorld, TorchrunBeatsSlurmAndFlagsBeatBoth) {
  const std::map<std::string, std::string> env{
      {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"RANK", "6"}, {"WORLD_SIZE", "16"}};
  EXPECT_EQ(from(env).rank, 6u);
  WorldFlags flags;
  flags.rank = 2;
  flags.world_size = 3;
  flags.master = "[fd77::1]:7000";
  const auto w = from(env, flags);
  EXPECT_EQ(w.rank, 2u);
  EXPECT_EQ(w.world_size, 3u);
  EXPECT_EQ(w.master_host, "fd77::1");
  EXPECT_EQ(w.master_port, 7000);
}

TEST(CollectiveWorld, ErrorsNameTheVariableOrFlag) {
  try {
    from({{"RANK", "x"}, {"WORLD_SIZE", "2"}});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("RANK='x'"), std::string::npos) << e.what();
  }
  try {
    from({{"RANK", "1"}});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("WORLD_SIZE is missing"), std::string::npos) << e.what();
  }
  try {
    from({{"RANK", "4"}, {"WORLD_SIZE", "4"}});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 4 is not below the world size 4"), std::string::npos) << e.what();
  }
  WorldFlags half;
  half.rank = 1;
  EXPECT_THROW(from({}, half), UsageError);
  WorldFlags bad_port;
  bad_port.rank = 0;
  bad_port.world_size = 1;
  bad_port.master = "h0:99999";
  EXPECT_THROW(from({}, bad_port), UsageError);
}

TEST(CollectiveWorld, ExpandsSlurmNodeLists) {
  EXPECT_EQ(expand_nodelist("node[1-3,7]"), (std::vector<std::string>{"node1", "node2", "node3", "node7"}));
  EXPECT_EQ(expand_nodelist("gpu-[08-10],login"), (std::vector<std::string>{"gpu-08", "gpu-09", "gpu-10", "login"}));
  EXPECT_EQ(expand_nodelist("a1,b2"), (std::vector<std::string>{"a1", "b2"}));
  EXPECT_EQ(expand_nodelist("rack[1-2]-n"), (std::vector<std::string>{"rack1-n", "rack2-n"}));
  EXPECT_THROW(expand_nodelist("node[1-"), UsageError);
  EXPECT_THROW(expand_nodelist("node[3-1]"), UsageError);
}

}  // namespace
}  // namespace xtk::collective
