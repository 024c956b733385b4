// Rank 0's rendezvous and the ranks' connections to it, in one process:
// the store, barriers, and the abort every rank gets when one of them dies,
// never joins, or waits in vain.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "collective/control_client.hpp"
#include "collective/control_server.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"

namespace xtk::collective {
namespace {

using namespace std::chrono_literals;

std::int64_t in(std::chrono::milliseconds d) { return monotonic_ns() + d.count() * 1'000'000; }

// A rank: its client, its progress, and what rank 0 told it when the job aborted.
struct Rank {
  Progress progress;
  std::mutex mutex;
  std::string abort_reason;
  std::unique_ptr<ControlClient> client;

  Rank(std::uint16_t port, std::uint32_t rank, std::uint32_t size) {
    client = std::make_unique<ControlClient>(fmt::format("127.0.0.1:{}", port), rank, size, 5'000'000'000, progress,
                                             [this](const std::string& reason) {
                                               std::lock_guard lock(mutex);
                                               abort_reason = reason;
                                             });
  }
  std::string reason() {
    std::lock_guard lock(mutex);
    return abort_reason;
  }
  // Waits up to `limit` for an abort.
  std::string await_abort(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      auto r = reason();
      if (!r.empty()) return r;
      std::this_thread::sleep_for(10ms);
    }
    return "";
  }
};

ServerTimes fast() {
  ServerTimes t;
  t.join_ns = 3'000'000'000;
  t.grace_ns = 100'000'000;
  t.ping_ns = 500'000'000;
  t.linger_ns = 1'000'000'000;
  return t;
}

TEST(CollectiveControl, StoreGetWaitsForSetAndTakeRemoves) {
  ControlServer server(2, 0, fast());
  Rank a(server.port(), 0, 2), b(server.port(), 1, 2);
  std::thread setter([&] {
    std::this_thread::sleep_for(100ms);
    b.client->set("key", std::string("v\0x", 3));
  });
  const auto value = a.client->get("key", in(3000ms));
  setter.join();
  ASSERT_TRUE(value);
  EXPECT_EQ(*value, std::string("v\0x", 3));
  EXPECT_EQ(b.client->get("key", in(1000ms), true), std::string("v\0x", 3));
  EXPECT_FALSE(a.client->get("key", in(200ms)).has_value());  // taken
  EXPECT_FALSE(a.client->get("never", in(100ms)).has_value());
  a.client->bye();
  b.client->bye();
  EXPECT_TRUE(server.wait_done(2'000'000'000));
}

TEST(CollectiveControl, BarrierReleasesOnlyWhenEveryRankArrived) {
  ControlServer server(3, 0, fast());
  Rank a(server.port(), 0, 3), b(server.port(), 1, 3), c(server.port(), 2, 3);
  std::atomic<int> released{0};
  std::thread ta([&] { released += a.client->barrier("b1", in(3000ms)) ? 1 : 0; });
  std::thread tb([&] { released += b.client->barrier("b1", in(3000ms)) ? 1 : 0; });
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(released.load(), 0);
  EXPECT_TRUE(c.client->barrier("b1", in(3000ms)));
  ta.join();
  tb.join();
  EXPECT_EQ(released.load(), 2);
  EXPECT_FALSE(a.client->barrier("b2", in(100ms)));  // alone: times out
}

TEST(CollectiveControl, ARankThatDisappearsIsNamedToEveryOther) {
  ControlServer server(3, 0, fast());
  Rank a(server.port(), 0, 3), b(server.port(), 1, 3);
  auto c = std::make_unique<Rank>(server.port(), 2, 3);
  c.reset();  // closes without bye, as a killed process does
  const auto reason = a.await_abort(3000ms);
  EXPECT_NE(reason.find("rank 2"), std::string::npos) << reason;
  EXPECT_NE(reason.find("left the job"), std::string::npos) << reason;
  EXPECT_EQ(b.await_abort(3000ms), reason);
  EXPECT_THROW(a.client->get("x", in(100ms)), Error);  // waits end at once after an abort
}

TEST(CollectiveControl, ARankThatNeverJoinsIsNamedAfterTheJoinTimeout) {
  auto times = fast();
  times.join_ns = 500'000'000;
  ControlServer server(3, 0, times);
  Rank a(server.port(), 0, 3), b(server.port(), 1, 3);
  const auto reason = a.await_abort(3000ms);
  EXPECT_NE(reason.find("rank 2 never joined"), std::string::npos) << reason;
  EXPECT_EQ(b.await_abort(1000ms), reason);
}

TEST(CollectiveControl, TwoProcessesClaimingOneRankAbortTheJob) {
  ControlServer server(2, 0, fast());
  Rank a(server.port(), 0, 2), b(server.port(), 0, 2);
  const auto reason = a.await_abort(3000ms);
  EXPECT_NE(reason.find("rank 0 joined twice"), std::string::npos) << reason;
}

TEST(CollectiveControl, AWorldSizeMismatchAbortsTheJob) {
  ControlServer server(2, 0, fast());
  Rank a(server.port(), 0, 2), b(server.port(), 1, 3);
  const auto reason = a.await_abort(3000ms);
  EXPECT_NE(reason.find("was started for a job of 3 processes, rank 0 for 2"), std::string::npos) << reason;
}

TEST(CollectiveControl, ALocalFailureIsPassedOnWithItsRank) {
  ControlServer server(2, 0, fast());
  Rank a(server.port(), 0, 2), b(server.port(), 1, 2);
  b.client->fail(FailKind::local, "model.csv:3: numel 'x' is not a positive integer");
  const auto reason = a.await_abort(3000ms);
  EXPECT_NE(reason.find("rank 1"), std::string::npos) << reason;
  EXPECT_NE(reason.find("failed: model.csv:3"), std::string::npos) << reason;
}

TEST(CollectiveControl, AWaitInVainNamesTheRankThatIsBehind) {
  ControlServer server(3, 0, fast());
  Rank a(server.port(), 0, 3), b(server.port(), 1, 3), c(server.port(), 2, 3);
  for (int i = 0; i < 5; ++i) {
    a.progress.advance();
    b.progress.advance();
  }
  c.progress.advance();
  c.progress.set_where("in training iteration 0");
  a.client->fail(FailKind::waiting, "all-reduce timed out");
  const auto reason = b.await_abort(3000ms);
  EXPECT_NE(reason.find("all-reduce timed out"), std::string::npos) << reason;
  EXPECT_NE(reason.find("rank 2"), std::string::npos) << reason;
  EXPECT_NE(reason.find("is behind, in training iteration 0"), std::string::npos) << reason;
}

TEST(CollectiveControl, AWaitInVainWithEveryRankAtTheSameStepBlamesTheNetwork) {
  ControlServer server(2, 0, fast());
  Rank a(server.port(), 0, 2), b(server.port(), 1, 2);
  b.client->fail(FailKind::waiting, "all-reduce timed out");
  const auto reason = a.await_abort(3000ms);
  EXPECT_NE(reason.find("the network between the ranks did not deliver"), std::string::npos) << reason;
}

TEST(CollectiveControl, ARankThatDoesNotAnswerIsNamed) {
  ControlServer server(2, 0, fast());
  Rank a(server.port(), 0, 2);
  // Rank 1 joins by hand and then never reads: a stopped process.
  int error = 0;
  Fd silent = connect_tcp_nonblocking(resolve_address(fmt::format("127.0.0.1:{}", server.port()), 0, "test"), &error);
  ASSERT_TRUE(silent);
  std::this_thread::sleep_for(100ms);
  const auto hello =
      encode_message(Message{MessageType::hello, 1, (std::uint64_t{4242} << 32) | 2, "stopped-host", ""});
  ASSERT_TRUE(send_all(silent.get(), hello, 1000));
  a.client->fail(FailKind::waiting, "all-reduce timed out");
  const auto reason = a.await_abort(3000ms);
  EXPECT_NE(reason.find("rank 1 (stopped-host, 127.0.0.1, pid 4242) did not answer"), std::string::npos) << reason;
}

TEST(CollectiveControl, ClientGivesUpOnAnAbsentRankZero) {
  Progress progress;
  const auto start = std::chrono::steady_clock::now();
  try {
    ControlClient client("127.0.0.1:1", 3, 4, 300'000'000, progress, [](const std::string&) {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 3: cannot reach rank 0's rendezvous at 127.0.0.1:1"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(CollectiveControlWire, MessagesSurviveAnySplit) {
  const Message m{MessageType::pong, 7, 1ULL << 40, "key", std::string("va\0lue", 6)};
  const auto bytes = encode_message(m) + encode_message(Message{MessageType::bye, 0, 0, "", ""});
  for (std::size_t cut = 0; cut <= bytes.size(); ++cut) {
    MessageDecoder d;
    d.feed(bytes.data(), cut);
    std::vector<Message> got;
    while (auto next = d.next()) got.push_back(*next);
    d.feed(bytes.data() + cut, bytes.size() - cut);
    while (auto next = d.next()) got.push_back(*next);
    ASSERT_EQ(got.size(), 2u) << cut;
    EXPECT_EQ(got[0].type, MessageType::pong);
    EXPECT_EQ(got[0].id, 7u);
    EXPECT_EQ(got[0].number, 1ULL << 40);
    EXPECT_EQ(got[0].key, "key");
    EXPECT_EQ(got[0].value, std::string("va\0lue", 6));
    EXPECT_EQ(got[1].type, MessageType::bye);
  }
}

TEST(CollectiveControlWire, MalformedFramesAreErrors) {
  MessageDecoder d;
  const std::string tiny("\0\0\0\x02xx", 6);
  d.feed(tiny.data(), tiny.size());
  EXPECT_THROW(d.next(), Error);
  auto bytes = encode_message(Message{MessageType::set, 0, 0, "k", "v"});
  bytes[4] = 99;  // no such type
  MessageDecoder e;
  e.feed(bytes.data(), bytes.size());
  EXPECT_THROW(e.next(), Error);
}

}  // namespace
}  // namespace xtk::collective

namespace xtk::collective {
namespace {

TEST(CollectiveProgress, CountsStepsAndKeepsWhereItIs) {
  Progress p;
  EXPECT_EQ(p.step(), 0u);
  EXPECT_EQ(p.where(), "starting");
  p.advance();
  p.advance();
  p.set_where("all-reduce of bucket 3");
  EXPECT_EQ(p.step(), 2u);
  EXPECT_EQ(p.where(), "all-reduce of bucket 3");
}

}  // namespace
}  // namespace xtk::collective
