// The RDMA transport's parts that need no device, run for real: flows split
// into messages within a window, completions counted back, queue-pair details
// across a real TCP connection between two processes, the attributes of each
// queue-pair transition, the device flags. And, where a device exists, flows
// over it; without one, the clear error a user gets (no RDMA device exists on
// the machines here: the verbs path has not run on hardware in this project).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/process.hpp"
#include "transport/device_flags.hpp"
#include "transport/rdma/control.hpp"
#include "transport/rdma/device.hpp"
#include "transport/rdma/messages.hpp"
#include "transport/rdma/queue_pair.hpp"
#include "transport/rdma/worker_resources.hpp"

namespace xtk::rdma {
namespace {

TEST(RdmaMessages, AFlowGoesAsMessagesWithinTheWindow) {
  MessagePlan plan(150'000, 65'536, 2, false);
  EXPECT_EQ(plan.next(), 65'536u);
  EXPECT_EQ(plan.next(), 65'536u);
  EXPECT_EQ(plan.next(), 0u);  // the window is full
  plan.completed(65'536);
  EXPECT_EQ(plan.next(), 150'000u - 2 * 65'536);  // the last one is the rest
  EXPECT_EQ(plan.next(), 0u);                     // all posted
  EXPECT_FALSE(plan.done());
  plan.completed(65'536);
  plan.completed(150'000 - 2 * 65'536);
  EXPECT_TRUE(plan.done());
  EXPECT_EQ(plan.completed_bytes(), 150'000u);
}

TEST(RdmaMessages, AnEmptyFlowIsDoneAtOnceAndAStreamWhenStoppedAndDrained) {
  MessagePlan empty(0, 4096, 4, false);
  EXPECT_EQ(empty.next(), 0u);
  EXPECT_TRUE(empty.done());

  MessagePlan stream(0, 4096, 3, true);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(stream.next(), 4096u);
  EXPECT_EQ(stream.next(), 0u);
  stream.completed(4096);
  stream.stop();
  EXPECT_EQ(stream.next(), 0u);  // stopped: nothing more is posted
  EXPECT_FALSE(stream.done());   // two still in flight
  stream.completed(4096);
  stream.completed(4096);
  EXPECT_TRUE(stream.done());
  EXPECT_EQ(stream.completed_bytes(), 3u * 4096);
}

TEST(RdmaMessages, CompletionsCountTheImmediateAsTheMessageLength) {
  ibv_wc wc{};
  wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
  wc.imm_data = htonl(12'345);
  EXPECT_TRUE(is_receive(wc));
  EXPECT_EQ(received_bytes(wc), 12'345u);
  wc.opcode = IBV_WC_RECV;
  EXPECT_TRUE(is_receive(wc));
  wc.opcode = IBV_WC_RDMA_WRITE;
  EXPECT_FALSE(is_receive(wc));
  DeviceSettings s;
  s.message_bytes = 1 << 20;
  s.outstanding = 32;
  QpInfo peer;
  peer.buffer_bytes = 65'536;
  peer.receive_depth = 8;
  EXPECT_EQ(message_bytes_to(s, peer), 65'536u);  // never past the peer's buffer
  EXPECT_EQ(window_to(s, peer), 8u);              // nor its posted receives
}

QpInfo sample(std::uint32_t qp) {
  QpInfo info;
  info.verb = Verb::send;
  info.mtu = IBV_MTU_4096;
  info.qp_num = qp;
  info.psn = 0xabcdef;
  info.lid = 17;
  for (std::size_t i = 0; i < info.gid.size(); ++i) info.gid[i] = static_cast<std::uint8_t>(0xf0 + i);
  info.rkey = 0x1234;
  info.buffer_addr = 0x7f00'0000'1000;
  info.buffer_bytes = 65'536;
  info.receive_depth = 16;
  return info;
}

TEST(RdmaQueuePair, DetailsRoundTripAndBadOnesSayWhy) {
  const QpInfo info = sample(0x123);
  std::string reason;
  EXPECT_EQ(decode_qp_info(encode(info), &reason), info) << reason;

  auto bytes = encode(info);
  bytes[0] = 'H';  // an HTTP server, say
  EXPECT_FALSE(decode_qp_info(bytes, &reason));
  EXPECT_NE(reason.find("--transport rdma"), std::string::npos) << reason;
  bytes = encode(info);
  bytes[4] = 9;
  EXPECT_FALSE(decode_qp_info(bytes, &reason));
  EXPECT_NE(reason.find("version 9"), std::string::npos) << reason;
  QpInfo bad = info;
  bad.qp_num = 0;
  EXPECT_FALSE(decode_qp_info(encode(bad), &reason));
  bad = info;
  bad.receive_depth = 0;
  EXPECT_FALSE(decode_qp_info(encode(bad), &reason));
}

TEST(RdmaQueuePair, TransitionsFollowTheSettingsAndThePeer) {
  DeviceSettings s;
  s.port = 2;
  const auto init = to_init(s);
  EXPECT_EQ(init.attr.qp_state, IBV_QPS_INIT);
  EXPECT_EQ(init.attr.port_num, 2);
  EXPECT_TRUE(init.attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE);
  EXPECT_EQ(init.mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);

  QpInfo local = sample(0x111), peer = sample(0x222);
  local.mtu = IBV_MTU_1024;
  // InfiniBand by LID: no GRH.
  auto rtr = to_rtr(s, local, peer);
  EXPECT_EQ(rtr.attr.qp_state, IBV_QPS_RTR);
  EXPECT_EQ(rtr.attr.dest_qp_num, 0x222u);
  EXPECT_EQ(rtr.attr.rq_psn, peer.psn);
  EXPECT_EQ(rtr.attr.path_mtu, IBV_MTU_1024);  // the lower of the two ports'
  EXPECT_EQ(rtr.attr.ah_attr.dlid, 17);
  EXPECT_EQ(rtr.attr.ah_attr.is_global, 0);
  EXPECT_TRUE(rtr.mask & IBV_QP_AV);
  // RoCE: a GID index, and the traffic class and service level in the address.
  s.gid_index = 3;
  s.traffic_class = 106;
  s.service_level = 5;
  rtr = to_rtr(s, local, peer);
  EXPECT_EQ(rtr.attr.ah_attr.is_global, 1);
  EXPECT_EQ(rtr.attr.ah_attr.grh.sgid_index, 3);
  EXPECT_EQ(rtr.attr.ah_attr.grh.traffic_class, 106);
  EXPECT_EQ(rtr.attr.ah_attr.sl, 5);
  EXPECT_EQ(std::memcmp(rtr.attr.ah_attr.grh.dgid.raw, peer.gid.data(), 16), 0);

  const auto rts = to_rts(local);
  EXPECT_EQ(rts.attr.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(rts.attr.sq_psn, local.psn);
  EXPECT_EQ(rts.attr.rnr_retry, 7);  // receiver-not-ready retried without end
}

// The exchange as the channels do it: each end sends its details on the
// control connection and reads the other's, across two processes.
TEST(RdmaQueuePair, DetailsCrossARealTcpConnectionBetweenTwoProcesses) {
  SocketAddress any = resolve_address("127.0.0.1:0", 0, "test");
  Fd listener = listen_tcp(any, false);
  getsockname(listener.get(), reinterpret_cast<sockaddr*>(&any.storage), &any.length);
  const QpInfo client_side = sample(0x333), server_side = sample(0x444);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the client
    int error = 0;
    ControlLink link(connect_tcp_nonblocking(any, &error));
    const auto mine = encode(client_side);
    bool sent = false;
    QpInfoBytes theirs{};
    std::size_t got = 0;
    for (int i = 0; i < 2000; ++i) {
      if (!sent) sent = link.send(mine.data(), mine.size()) && !link.pending_output();
      if (sent && link.receive(theirs.data(), theirs.size(), got) == ControlLink::Read::complete) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::string reason;
    const auto peer = decode_qp_info(theirs, &reason);
    _exit(peer && *peer == server_side ? 0 : 3);
  }
  int fd = -1;  // the listener does not block: wait for the child's connection
  for (int i = 0; i < 2000 && fd < 0; ++i) {
    fd = accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (fd < 0) ::kill(child, SIGKILL);
  ASSERT_GE(fd, 0);
  ControlLink link{Fd(fd)};
  QpInfoBytes theirs{};
  std::size_t got = 0;
  for (int i = 0; i < 2000 && link.receive(theirs.data(), theirs.size(), got) != ControlLink::Read::complete; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::string reason;
  const auto peer = decode_qp_info(theirs, &reason);
  ASSERT_TRUE(peer) << reason;
  EXPECT_EQ(*peer, client_side);
  const auto mine = encode(server_side);
  ASSERT_TRUE(link.send(mine.data(), mine.size()));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// The completion queue is polled from the worker's spin phase (zero-timeout
// dispatches), not from its sleeps, and not past the "too close" verdict.
TEST(RdmaPoller, BusyPollsRunOnlyInTheSpinPhase) {
  struct Quiet final : EventSource {
    void on_events(std::uint32_t, std::int64_t) override {}
  } source;
  Poller poller;
  int polls = 0;
  poller.add_busy_poll(source, [&](std::int64_t) { ++polls; });
  const timespec zero{0, 0}, short_wait{0, 1'000'000};
  poller.dispatch(&zero, [] { return std::int64_t{1}; });
  EXPECT_EQ(polls, 1);
  poller.dispatch(&short_wait, [] { return std::int64_t{1}; });  // a sleep: the completion channel wakes it
  EXPECT_EQ(polls, 1);
  poller.dispatch(&zero, [] { return std::int64_t{-1}; });  // a start is too close
  EXPECT_EQ(polls, 1);
  poller.forget(source);
  poller.dispatch(&zero, [] { return std::int64_t{1}; });
  EXPECT_EQ(polls, 1);
}

TEST(RdmaFlags, SettingsComeFromTheFlagsAndBadOnesNameTheFlag) {
  DeviceFlags f;
  f.device = "mlx5_0";
  f.port = 2;
  f.gid_index = 3;
  f.traffic_class = 106;
  f.message_size = "1M";
  f.outstanding = 8;
  f.verb = "send";
  const auto s = to_settings(f);
  EXPECT_EQ(s.device, "mlx5_0");
  EXPECT_EQ(s.message_bytes, 1u << 20);
  EXPECT_EQ(s.verb, "send");
  auto error_of = [](DeviceFlags bad) {
    try {
      to_settings(bad);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  DeviceFlags bad = f;
  bad.verb = "read";
  EXPECT_NE(error_of(bad).find("--verb"), std::string::npos);
  bad = f;
  bad.outstanding = 0;
  EXPECT_NE(error_of(bad).find("--outstanding"), std::string::npos);
  bad = f;
  bad.port = 0;
  EXPECT_NE(error_of(bad).find("--ib-port"), std::string::npos);
  bad = f;
  bad.message_size = "lots";
  EXPECT_NE(error_of(bad).find("--msg-size"), std::string::npos);
}

// Without a device, --transport rdma fails at once, saying so and what to do.
TEST(RdmaDevice, WithoutADeviceTheErrorSaysHowToGoOn) {
  if (!device_names().empty()) GTEST_SKIP() << "this host has an RDMA device: the flows test runs instead";
  const auto client = run_command(
      {XTK_CLIENT_BIN, "--transport", "rdma", "--bulk", "1", "--dst", "127.0.0.1:1", "-t", "1s", "-o", "/dev/null"},
      std::chrono::seconds(30));
  EXPECT_EQ(client.exit_status, 1) << client.output;
  EXPECT_NE(client.output.find("no RDMA device on this host"), std::string::npos) << client.output;
  EXPECT_NE(client.output.find("--transport tcp"), std::string::npos) << client.output;
  const auto server = run_command({XTK_SERVER_BIN, "--transport", "rdma", "--listen", "127.0.0.1:0", "-t", "1s"},
                                  std::chrono::seconds(30));
  EXPECT_EQ(server.exit_status, 1) << server.output;
  EXPECT_NE(server.output.find("no RDMA device on this host"), std::string::npos) << server.output;
}

// On a host with a device (port 1 active; RoCE needs XTK_RDMA_GID_INDEX): a
// web-search schedule pushed and pulled, and a stream, through the device's
// loopback, every flow ok.
TEST(RdmaDevice, FlowsOverTheDevice) {
  if (device_names().empty()) {
    GTEST_SKIP() << "no RDMA device on this host (no InfiniBand in these kernels, no soft-RoCE): the verbs path "
                    "was not run";
  }
  const char* gid = std::getenv("XTK_RDMA_GID_INDEX");
  const std::string gid_index = gid != nullptr ? gid : "-1";
  const std::string port = std::to_string(23000 + ::getpid() % 2000);
  const std::string schedule = "/tmp/xtk_rdma_" + std::to_string(::getpid()) + ".csv";
  run_checked(
      {XTK_GEN_BIN, "--cdf", "web-search", "--load", "0.3", "--link", "1G", "-t", "1s", "--dst", "h1", "-o", schedule});
  ChildProcess server(
      {XTK_SERVER_BIN, "--transport", "rdma", "-x", gid_index, "--listen", "127.0.0.1:" + port, "-t", "30s", "--quiet"},
      "/dev/null");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::vector<std::string> rdma{"--transport", "rdma", "-x", gid_index, "-o", "/dev/null", "--json"};
  for (const char* direction : {"push", "pull"}) {
    std::vector<std::string> argv{XTK_CLIENT_BIN, schedule, "--map", "h1=127.0.0.1:" + port, "--direction", direction};
    argv.insert(argv.end(), rdma.begin(), rdma.end());
    const auto run = run_command(argv, std::chrono::seconds(60));
    ASSERT_EQ(run.exit_status, 0) << direction << ": " << run.output;
    const auto summary = nlohmann::json::parse(run.output)["summary"];
    EXPECT_EQ(summary["flows_by_status"]["ok"], summary["flows"]) << direction << ": " << run.output;
  }
  std::vector<std::string> bulk{XTK_CLIENT_BIN, "--bulk", "2", "--dst", "127.0.0.1:" + port, "-t", "1s"};
  bulk.insert(bulk.end(), rdma.begin(), rdma.end());
  const auto streams = run_command(bulk, std::chrono::seconds(60));
  EXPECT_EQ(streams.exit_status, 0) << streams.output;
  server.signal(SIGINT);
  server.wait(std::chrono::seconds(10));
  std::remove(schedule.c_str());
}

}  // namespace
}  // namespace xtk::rdma
