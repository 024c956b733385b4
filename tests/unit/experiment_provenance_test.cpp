// What a step's run.json records of what ran: the hosts' kernels and NICs as
// `uname -r` and `ethtool -i` answer, and NCCL's and CUDA's versions from a
// rank's NCCL_DEBUG=INFO output (recorded on 2xH100, tests/data/nccl).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/provenance.hpp"
#include "experiment/provenance.hpp"

namespace xtk {
namespace {

TEST(Provenance, HostAnswerGivesKernelAndNic) {
  const auto j = parse_host_answer(
      "kernel: 6.1.0-18-amd64\ntcp_congestion_control: cubic\ndriver: mlx5_core\nversion: "
      "24.10-1.1.4\nfirmware-version: 28.39.1002 (MT_0000000838)\n"
      "bus-info: 0000:17:00.0\n");
  EXPECT_EQ(j["kernel"], "6.1.0-18-amd64");
  EXPECT_EQ(j["tcp_congestion_control"], "cubic");
  EXPECT_EQ(j["nic"]["driver"], "mlx5_core");
  EXPECT_EQ(j["nic"]["version"], "24.10-1.1.4");
  EXPECT_EQ(j["nic"]["firmware"], "28.39.1002 (MT_0000000838)");
}

TEST(Provenance, HostWithoutEthtoolSaysUnknown) {
  const auto j = parse_host_answer("kernel: 6.8.0\n");
  EXPECT_EQ(j["kernel"], "6.8.0");
  EXPECT_EQ(j["nic"]["driver"], "unknown");
  EXPECT_EQ(j["tcp_congestion_control"], "unknown");
  EXPECT_EQ(parse_host_answer("")["kernel"], "unknown");
  EXPECT_EQ(parse_host_answer("tcp_congestion_control: \n")["tcp_congestion_control"], "unknown");
}

TEST(Provenance, NcclAndCudaVersionsFromARanksLog) {
  std::ifstream in(std::string(XTK_NCCL_LOGS) + "/socket.log");
  std::stringstream log;
  log << in.rdbuf();
  const auto v = nccl_versions(log.str());
  ASSERT_TRUE(v);
  EXPECT_EQ((*v)["nccl"], "2.28.9");
  EXPECT_EQ((*v)["cuda"], "13.0");
  EXPECT_FALSE(nccl_versions("xtk-collective: gloo only\n"));
}

TEST(Provenance, BuildNamesVersionAndRevision) {
  record_command_line(0, nullptr);
  const auto j = tool_provenance();
  EXPECT_FALSE(j["version"].get<std::string>().empty());
  EXPECT_FALSE(j["git_revision"].get<std::string>().empty());
}

}  // namespace
}  // namespace xtk
