// The recorded DDP ResNet-50 job (tests/data/replay/resnet50-ddp: 2 H200s,
// PyTorch 2.11, scripts/record-trace.py) read as the replay reads it: the
// collective sequence as recorded, the compute between the calls from the
// Kineto trace, and errors that name the file and node.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>

#include "collective/execution_trace.hpp"
#include "common/error_of.hpp"
#include "core/error.hpp"

namespace xtk::collective {
namespace {

const std::string kDir = std::string(XTK_REPLAY_DATA) + "/resnet50-ddp";

using xtk::testing::error_of;

struct Expected {
  const char* torch_name;
  DataType type;
  std::size_t elements;
};

// What DDP does in one iteration: broadcast the module's buffers (batch-norm
// running statistics in float, their batch counters in int64) from rank 0,
// wait for them, then all-reduce ResNet-50's gradients in 5 buckets (25 MiB
// caps, the first smaller) as the backward pass fills them.
const std::vector<Expected> kSequence{{"broadcast", DataType::float32, 53120},
                                      {"broadcast", DataType::int64, 53},
                                      {"wait", DataType::float32, 0},
                                      {"wait", DataType::float32, 0},
                                      {"allreduce", DataType::float32, 2049000},
                                      {"allreduce", DataType::float32, 7875584},
                                      {"allreduce", DataType::float32, 6563840},
                                      {"allreduce", DataType::float32, 6637568},
                                      {"allreduce", DataType::float32, 2431040}};

}  // namespace

TEST(ReplayTrace, RecordedDdpResNet50HasItsCollectiveSequence) {
  for (int rank : {0, 1}) {
    const auto trace = read_recorded_trace(fmt::format("{}/et-rank{}.json.gz", kDir, rank), "");
    ASSERT_EQ(trace.iterations.size(), 1u);
    const auto& it = trace.iterations.front();
    EXPECT_EQ(it.name, "ProfilerStep#2");
    ASSERT_EQ(it.calls.size(), kSequence.size());
    std::size_t gradients = 0;
    for (std::size_t i = 0; i < kSequence.size(); ++i) {
      const auto& c = it.calls[i];
      SCOPED_TRACE(fmt::format("rank {} call {}", rank, i));
      EXPECT_EQ(c.torch_name, kSequence[i].torch_name);
      if (c.is_wait()) continue;
      EXPECT_EQ(c.type, kSequence[i].type);
      EXPECT_EQ(c.counts.send, kSequence[i].elements);
      EXPECT_EQ(c.counts.recv, kSequence[i].elements);
      EXPECT_EQ(c.group, (ProcessGroup{"0", "default_pg", 0, 1, 2}));
      EXPECT_EQ(c.root, 0u);
      EXPECT_EQ(c.compute_before_ns, 0);  // no Kineto trace given
      if (c.torch_name == "allreduce") {
        EXPECT_EQ(c.collective->name(), "all-reduce");
        gradients += c.counts.send;
      } else {
        EXPECT_EQ(c.collective->name(), "broadcast");
      }
    }
    EXPECT_EQ(gradients, 25557032u);  // torchvision's ResNet-50 parameters
  }
}

TEST(ReplayTrace, ComputeBetweenTheCallsComesFromTheKinetoTrace) {
  const auto trace = read_recorded_trace(kDir + "/et-rank0.json.gz", kDir + "/kineto-rank0.json.gz");
  const auto& it = trace.iterations.front();
  // The GPU's compute kernels of the profiled step, busy time: about 35 ms
  // of the job's 37 ms iterations (recorded.json).
  EXPECT_GT(it.compute_ns(), 30'000'000);
  EXPECT_LT(it.compute_ns(), 37'000'000);
  // The forward pass runs after the buffers' broadcast and before the first
  // bucket is full; every later bucket waits for its share of the backward
  // pass; the optimizer step runs after the last all-reduce.
  EXPECT_GT(it.calls[4].compute_before_ns, 5'000'000);
  for (std::size_t i = 5; i < it.calls.size(); ++i) EXPECT_GT(it.calls[i].compute_before_ns, 0) << i;
  EXPECT_GT(it.after_join_ns, 0);
}

// A trace of two profiled steps (tests/data/replay/two-steps.json, written by
// hand): each step keeps the calls recorded after it began, with its own
// type, root and wait.
TEST(ReplayTrace, SeveralProfiledStepsEachKeepTheirCalls) {
  const auto trace = read_recorded_trace(std::string(XTK_REPLAY_DATA) + "/two-steps.json", "");
  ASSERT_EQ(trace.iterations.size(), 2u);
  EXPECT_EQ(trace.iterations[0].name, "ProfilerStep#5");
  ASSERT_EQ(trace.iterations[0].calls.size(), 1u);
  EXPECT_EQ(trace.iterations[0].calls[0].collective->name(), "all-reduce");
  EXPECT_EQ(trace.iterations[0].calls[0].type, DataType::bfloat16);
  EXPECT_EQ(trace.iterations[0].calls[0].counts.send, 1000u);
  ASSERT_EQ(trace.iterations[1].calls.size(), 2u);
  EXPECT_EQ(trace.iterations[1].calls[0].collective->name(), "broadcast");
  EXPECT_EQ(trace.iterations[1].calls[0].type, DataType::int64);
  EXPECT_EQ(trace.iterations[1].calls[0].root, 1u);
  EXPECT_EQ(trace.iterations[1].calls[0].group.description, "");
  EXPECT_TRUE(trace.iterations[1].calls[1].is_wait());
}

// A tensor- and pipeline-parallel job recorded on 4 H100s
// (tests/data/replay/tp2-pp2, scripts/record-trace.py --job tp-pp): 2 stages
// of 2 tensor-parallel ranks. Each stage all-reduces its blocks' outputs (and
// on the way back their input gradients) in its group of 2; stage 0 sends the
// activation to its peer in stage 1 and receives the gradient back over the
// default group, each waited for; the loss is all-reduced over all 4.
TEST(ReplayTrace, SubGroupsAndPointToPointKeepTheirGroupsAndPeers) {
  const std::string dir = std::string(XTK_REPLAY_DATA) + "/tp2-pp2";
  constexpr std::size_t kActivation = 4096 * 4096;
  const std::vector<std::uint32_t> job{0, 1, 2, 3};
  struct Call {
    const char* name;
    std::vector<std::uint32_t> ranks;
    std::uint32_t peer;
  };
  const auto stage0 = [&](std::uint32_t peer) {
    return std::vector<Call>{{"all-reduce", {0, 1}, 0}, {"all-reduce", {0, 1}, 0}, {"send", job, peer},
                             {"wait", {}, 0},           {"recv", job, peer},       {"wait", {}, 0},
                             {"all-reduce", {0, 1}, 0}};
  };
  const auto stage1 = [&](std::uint32_t peer) {
    return std::vector<Call>{
        {"recv", job, peer},       {"wait", {}, 0},           {"all-reduce", {2, 3}, 0}, {"all-reduce", {2, 3}, 0},
        {"all-reduce", {2, 3}, 0}, {"all-reduce", {2, 3}, 0}, {"send", job, peer},       {"wait", {}, 0}};
  };
  const std::vector<std::vector<Call>> expected{stage0(2), stage0(3), stage1(0), stage1(1)};
  for (std::uint32_t rank = 0; rank < 4; ++rank) {
    const auto trace = read_recorded_trace(fmt::format("{}/et-rank{}.json.gz", dir, rank),
                                           fmt::format("{}/kineto-rank{}.json.gz", dir, rank));
    ASSERT_EQ(trace.iterations.size(), 1u);
    const auto& calls = trace.iterations.front().calls;
    ASSERT_EQ(calls.size(), expected[rank].size() + 1);
    for (std::size_t i = 0; i < expected[rank].size(); ++i) {
      SCOPED_TRACE(fmt::format("rank {} call {}", rank, i));
      const auto& e = expected[rank][i];
      if (std::string_view(e.name) == "wait") {
        EXPECT_TRUE(calls[i].is_wait());
        continue;
      }
      EXPECT_EQ(calls[i].collective->name(), e.name);
      EXPECT_EQ(calls[i].group.ranks(), e.ranks);
      EXPECT_EQ(calls[i].type, DataType::bfloat16);
      EXPECT_EQ(calls[i].counts.param, kActivation);
      if (calls[i].collective->point_to_point()) {
        EXPECT_EQ(calls[i].root, e.peer);
        EXPECT_EQ(calls[i].counts.send, e.name == std::string_view("send") ? kActivation : 0);
        EXPECT_EQ(calls[i].counts.recv, e.name == std::string_view("recv") ? kActivation : 0);
      }
    }
    // The loss, all-reduced over the whole job.
    EXPECT_EQ(calls.back().group.ranks(), job);
    EXPECT_EQ(calls.back().type, DataType::float32);
  }
}

// A pipeline job recorded on 2 H100s (tests/data/replay/tp1-pp2,
// scripts/record-trace.py --job tp-pp --tp 1 --pp 2): each stage's
// all-reduces run on a group of one rank, which c10d writes without a stride;
// the activation goes to stage 1 and its gradient comes back over the default
// group, each send and recv waited for.
TEST(ReplayTrace, RecordedPipelineJobKeepsItsGroupsAndPeers) {
  const std::string dir = std::string(XTK_REPLAY_DATA) + "/tp1-pp2";
  constexpr std::size_t kActivation = 4096 * 4096;
  struct Call {
    const char* name;
    std::vector<std::uint32_t> ranks;
  };
  const std::vector<Call> stage0{{"all-reduce", {0}}, {"all-reduce", {0}}, {"send", {0, 1}},   {"wait", {}},
                                 {"recv", {0, 1}},    {"wait", {}},        {"all-reduce", {0}}};
  const std::vector<Call> stage1{{"recv", {0, 1}},    {"wait", {}},        {"all-reduce", {1}}, {"all-reduce", {1}},
                                 {"all-reduce", {1}}, {"all-reduce", {1}}, {"send", {0, 1}},    {"wait", {}}};
  for (std::uint32_t rank = 0; rank < 2; ++rank) {
    const auto trace = read_recorded_trace(fmt::format("{}/et-rank{}.json.gz", dir, rank),
                                           fmt::format("{}/kineto-rank{}.json.gz", dir, rank));
    ASSERT_EQ(trace.iterations.size(), 1u);
    const auto& calls = trace.iterations.front().calls;
    const auto& expected = rank == 0 ? stage0 : stage1;
    ASSERT_EQ(calls.size(), expected.size() + 1);
    for (std::size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE(fmt::format("rank {} call {}", rank, i));
      if (std::string_view(expected[i].name) == "wait") {
        EXPECT_TRUE(calls[i].is_wait());
        continue;
      }
      EXPECT_EQ(calls[i].collective->name(), expected[i].name);
      EXPECT_EQ(calls[i].group.ranks(), expected[i].ranks);
      EXPECT_EQ(calls[i].type, DataType::bfloat16);
      EXPECT_EQ(calls[i].counts.param, kActivation);
      if (calls[i].collective->point_to_point()) {
        EXPECT_EQ(calls[i].root, 1 - rank);
      }
    }
    // The loss, all-reduced over both stages.
    EXPECT_EQ(calls.back().group.ranks(), (std::vector<std::uint32_t>{0, 1}));
    EXPECT_EQ(calls.back().type, DataType::float32);
    EXPECT_EQ(calls.back().counts.param, 1u);
  }
}

TEST(ReplayTrace, ErrorsNameTheFileAndTheNode) {
  const auto dir = std::filesystem::temp_directory_path() / ("xtk_replay_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream((dir / name).string()) << text;
    return (dir / name).string();
  };
  EXPECT_NE(error_of([&] { read_recorded_trace((dir / "none.json").string(), ""); }).find("cannot read"),
            std::string::npos);
  const auto junk = write("junk.json", "{not json");
  EXPECT_NE(error_of([&] { read_recorded_trace(junk, ""); }).find("junk.json: not a JSON document"), std::string::npos);
  const auto no_nodes = write("kineto.json", R"({"traceEvents": []})");
  EXPECT_NE(error_of([&] { read_recorded_trace(no_nodes, ""); }).find("no \"nodes\" array"), std::string::npos);
  const auto gather = write("gather.json", R"({"nodes": [
      {"id": 1, "name": "ProfilerStep#0"},
      {"id": 2, "name": "record_param_comms", "ctrl_deps": 1, "inputs": {"values": []},
       "attrs": [{"name": "rf_id", "type": "uint64", "value": 7},
                 {"name": "collective_name", "type": "string", "value": "gather"}]}]})");
  EXPECT_NE(error_of([&] {
              read_recorded_trace(gather, "");
            }).find("gather.json (node 2): collective 'gather' is not replayed"),
            std::string::npos)
      << error_of([&] { read_recorded_trace(gather, ""); });
  // A group of uneven ranks (c10d's stride -1), and a send to a peer outside its group.
  const auto call = [](const std::string& name, int stride, int peer) {
    return fmt::format(R"({{"nodes": [{{"id": 1, "name": "ProfilerStep#0"}},
      {{"id": 2, "name": "record_param_comms", "ctrl_deps": 1, "inputs": {{"values": [[], [1, false], ["5", ""], {}, "{}"]}},
       "attrs": [{{"name": "rf_id", "value": 7}}, {{"name": "collective_name", "value": "{}"}},
                 {{"name": "dtype", "value": "Float"}}, {{"name": "in_msg_nelems", "value": 8}},
                 {{"name": "out_msg_nelems", "value": 8}}, {{"name": "pg_name", "value": "5"}},
                 {{"name": "global_rank_start", "value": 0}}, {{"name": "global_rank_stride", "value": {}}},
                 {{"name": "pg_size", "value": 2}}]}}]}})",
                       peer, name, name, stride);
  };
  EXPECT_NE(error_of([&] {
              read_recorded_trace(write("uneven.json", call("allreduce", -1, 0)), "");
            }).find("uneven.json (node 2): allreduce over process group '5', whose ranks are not evenly spaced"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read_recorded_trace(write("peer.json", call("send", 1, 2)), "");
            }).find("peer.json (node 2): send with peer 2 in process group '5' of 2 ranks"),
            std::string::npos);
  // Values of the wrong kind deep in a file: a float where c10d writes a whole
  // number, a string id, a kernel of negative length.
  const auto float_size = fmt::format(R"({{"nodes": [{{"id": 1, "name": "ProfilerStep#0"}},
      {{"id": 2, "name": "record_param_comms", "attrs": [{{"name": "rf_id", "value": 7}},
        {{"name": "collective_name", "value": "allreduce"}}, {{"name": "dtype", "value": "Float"}},
        {{"name": "in_msg_nelems", "value": 8.5}}, {{"name": "out_msg_nelems", "value": 8}},
        {{"name": "pg_name", "value": "0"}}, {{"name": "global_rank_start", "value": 0}},
        {{"name": "global_rank_stride", "value": 1}}, {{"name": "pg_size", "value": 2}}]}}]}})");
  EXPECT_NE(error_of([&] {
              parse_recorded_trace(float_size, "float.json", "", "");
            }).find("float.json (node 2): attribute \"in_msg_nelems\" has the wrong type: 8.5"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              parse_recorded_trace(R"({"nodes": [{"id": "1", "name": "ProfilerStep#0"}]})", "id.json", "", "");
            }).find("id.json: a node without a numeric \"id\""),
            std::string::npos);
  const auto step = fmt::format(R"({{"traceEvents": [
      {{"cat": "user_annotation", "name": "ProfilerStep#0", "ts": 0, "dur": 100}},
      {{"cat": "cpu_op", "name": "record_param_comms", "ts": 50, "args": {{"Record function id": 7}}}},
      {{"cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10, "args": {{"correlation": {}}}}},
      {{"cat": "kernel", "name": "gemm", "ts": 20, "dur": {}, "args": {{"correlation": 1}}}}]}})",
                                "1", "-5");
  EXPECT_NE(error_of([&] {
              parse_recorded_trace(call("allreduce", 1, 0), "et.json", step, "k.json");
            }).find("k.json: kernel 'gemm' at 20 µs lasts -5 µs"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              read_recorded_trace(kDir + "/et-rank0.json.gz", no_nodes);
            }).find("no ProfilerStep#2 in the Kineto trace"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace xtk::collective
