// The flow engine over real sockets on loopback: xtk-server and xtk-client
// engines in one process, so faults can be injected at exact moments.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>

#include "common/cpu_wake_latency.hpp"
#include "core/clock.hpp"
#include "core/cpus.hpp"
#include "core/error.hpp"
#include "core/idle_poller.hpp"
#include "core/kernel_files.hpp"
#include "core/open_files.hpp"
#include "core/process.hpp"
#include "flow/client.hpp"
#include "flow/client_worker.hpp"
#include "flow/server.hpp"
#include "formats/csv_file.hpp"
#include "formats/flow_records.hpp"
#include "transport/socket.hpp"
#include "transport/tcp/tcp.hpp"
#include "transport/wire.hpp"
#include "workload/generator.hpp"

namespace xtk {
namespace {

using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("xtk_loop_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// A schedule of google-rpc-sized flows to 127.0.0.1; returns its flow count.
std::uint64_t write_schedule_file(const std::string& path, double load_bps, std::int64_t duration_ns,
                                  const std::string& cdf = "google-rpc") {
  GenConfig c;
  c.cdf = std::make_shared<FlowSizeCdf>(FlowSizeCdf::load_file(std::string(XTK_CDF_DIR) + "/" + cdf + ".cdf"));
  c.load_bps = load_bps;
  c.link_bps = 10e9;
  c.duration_ns = duration_ns;
  c.sources = {"h0"};
  c.destinations = parse_host_mix("127.0.0.1", "--dst");
  return write_schedule(c, path).flows;
}

// The records in `path`, read with the format's one reader.
std::vector<FlowRecord> records_in(const std::string& path) {
  std::vector<FlowRecord> out;
  read_flow_records(read_text_file(path, "flow records"), path, [&](const FlowRecord& r) { out.push_back(r); });
  return out;
}

// Flow statuses in a records file, and the number of records.
std::map<std::string, std::uint64_t> statuses(const std::string& path, std::uint64_t* total = nullptr) {
  std::map<std::string, std::uint64_t> out;
  const auto records = records_in(path);
  for (const auto& r : records) out[std::string(status_name(r.status))]++;
  if (total) *total = records.size();
  return out;
}

ServerOptions loopback_server(unsigned threads = 1) {
  ServerOptions o;
  o.listen = {"127.0.0.1:0"};
  o.threads = threads;
  return o;
}

std::uint16_t port_of(const Server& s) {
  const auto& a = s.addresses().front();
  return ntohs(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_port);
}

ClientOptions client_for(const Server& server, const std::string& schedule, const std::string& records) {
  ClientOptions o;
  o.schedule = schedule;
  o.records = records;
  o.port = port_of(server);
  o.prepare_ns = 100'000'000;
  o.retry_ns = 300'000'000;
  return o;
}

int connect_loopback(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// True when the server closes `fd` within 2 s.
bool closed_by_peer(int fd) {
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char byte = 0;
  return recv(fd, &byte, 1, 0) <= 0 && errno != EAGAIN;
}

// One push flow by hand; returns whether the acknowledgement arrived.
bool push_by_hand(std::uint16_t port, std::uint64_t size, std::uint64_t token = 0) {
  const int fd = connect_loopback(port);
  if (fd < 0) return false;
  FlowHeader h;
  h.flow_id = 77;
  h.size_bytes = size;
  h.token = token;
  const auto header = encode(h);
  bool ok = send(fd, header.data(), header.size(), 0) == static_cast<ssize_t>(header.size());
  std::vector<char> payload(size);
  ok = ok && send(fd, payload.data(), payload.size(), 0) == static_cast<ssize_t>(size);
  AckBytes ack{};
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ok = ok && recv(fd, ack.data(), ack.size(), MSG_WAITALL) == static_cast<ssize_t>(ack.size()) && decode_ack(ack) == 77;
  ::close(fd);
  return ok;
}

// Readies `shared` for one worker in this process, its flows to
// 127.0.0.1:`port`, its time zero now. SCHED_FIFO where permitted: on a loaded
// machine (CI builds beside the tests) a normal thread woken by the doorbell
// may wait milliseconds for a CPU.
void for_one_worker(client_detail::Shared& shared, std::uint16_t port) {
  static const Timing timing(
      [] {
        TimingRequest request;
        request.pinning = CpuPinning::none;
        request.cpu_wake_latency_ns = kWakeLatencyNone;
        return request;
      }(),
      {});
  shared.destinations.push_back({"127.0.0.1", resolve_address("127.0.0.1", port, "test")});
  shared.timing = &timing;
  shared.start_mono_ns = monotonic_ns();
}

void wait_for(const std::function<bool()>& condition) {
  for (int i = 0; i < 500 && !condition(); ++i) std::this_thread::sleep_for(10ms);
}

}  // namespace

TEST(Loopback, PushAndPullEveryFlowEndsOk) {
  TempDir dir;
  Server server(loopback_server());
  server.start();
  const auto flows = write_schedule_file(dir.file("s.csv"), 200e6, 500'000'000);
  ASSERT_GT(flows, 1000u);
  for (auto direction : {Direction::push, Direction::pull}) {
    auto o = client_for(server, dir.file("s.csv"), dir.file("r.csv"));
    o.direction = direction;
    std::atomic<bool> interrupt{false};
    const auto result = run_client(o, interrupt);
    std::uint64_t total = 0;
    const auto by_status = statuses(dir.file("r.csv"), &total);
    EXPECT_EQ(total, flows);
    EXPECT_EQ(result.records, flows);
    EXPECT_EQ(by_status.at("ok"), flows) << "direction " << static_cast<int>(direction);
    EXPECT_EQ(result.summary.flows_with(FlowStatus::ok), flows);
  }
  // The server counts a flow after its last byte leaves, which may be after the client has read it.
  wait_for([&] { return server.counters().pull_flows == flows; });
  const auto c = server.counters();
  EXPECT_EQ(c.push_flows, flows);
  EXPECT_EQ(c.pull_flows, flows);
  EXPECT_EQ(c.bad_headers, 0u);
}

// Four client workers into four server workers (one listener each on a
// shared port): every flow has one record and the server counted each once.
TEST(Loopback, FourThreadsEachEndAccountForEveryFlow) {
  TempDir dir;
  Server server(loopback_server(4));
  server.start();
  const auto flows = write_schedule_file(dir.file("s.csv"), 200e6, 500'000'000);
  for (auto direction : {Direction::push, Direction::pull}) {
    auto o = client_for(server, dir.file("s.csv"), dir.file("r.csv"));
    o.threads = 4;
    o.direction = direction;
    std::atomic<bool> interrupt{false};
    const auto result = run_client(o, interrupt);
    std::uint64_t total = 0;
    const auto by_status = statuses(dir.file("r.csv"), &total);
    EXPECT_EQ(total, flows);
    EXPECT_EQ(by_status.at("ok"), flows);
    EXPECT_EQ(result.summary.flows_with(FlowStatus::ok), flows);
  }
  wait_for([&] { return server.counters().pull_flows == flows; });
  // The server counts a flow after its last byte leaves, which may be after the client has read it.
  wait_for([&] { return server.counters().pull_flows == flows; });
  const auto c = server.counters();
  EXPECT_EQ(c.push_flows, flows);
  EXPECT_EQ(c.pull_flows, flows);
  EXPECT_EQ(c.bad_headers + c.aborted_flows, 0u);
}

// Loopback connections in TIME_WAIT (/proc/net/tcp, state 06): those whose
// local port is `port` (the server's side) and those whose remote port is
// (the clients' sides).
std::pair<std::uint64_t, std::uint64_t> time_waits(std::uint16_t port) {
  std::ifstream in("/proc/net/tcp");
  std::uint64_t server_side = 0, client_side = 0;
  std::string line;
  std::getline(in, line);  // column names
  for (; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state != "06") continue;
    const auto port_of_field = [](const std::string& address) {
      return static_cast<std::uint16_t>(std::stoul(address.substr(address.find(':') + 1), nullptr, 16));
    };
    if (port_of_field(local) == port) ++server_side;
    if (port_of_field(remote) == port) ++client_side;
  }
  return {server_side, client_side};
}

// A connection per flow, push and pull: the server closes each after its flow
// (the header's `last` flag), so TIME_WAIT stays on its side and the
// client's ports are free again at once.
TEST(Loopback, PerFlowPolicyOpensAConnectionPerFlowAndTheServerClosesIt) {
  TempDir dir;
  Server server(loopback_server());
  server.start();
  const auto flows = write_schedule_file(dir.file("s.csv"), 50e6, 300'000'000);
  ASSERT_GT(flows, 50u);
  for (auto direction : {Direction::push, Direction::pull}) {
    auto o = client_for(server, dir.file("s.csv"), dir.file("r.csv"));
    o.policy = ConnectionPolicy::per_flow;
    o.direction = direction;
    std::atomic<bool> interrupt{false};
    const auto result = run_client(o, interrupt);
    EXPECT_EQ(result.summary.flows_with(FlowStatus::ok), flows);
    EXPECT_TRUE(result.summary.to_json()["pool_ahead_ns"].is_null()) << "no pool, no look-ahead";
  }
  wait_for([&] { return server.counters().pull_flows == flows; });
  const auto c = server.counters();
  EXPECT_EQ(c.accepted, 2 * flows);
  EXPECT_EQ(c.push_flows, flows);
  EXPECT_EQ(c.bad_headers + c.aborted_flows, 0u);
  // The last connections' closes complete after the client has returned: a
  // server socket waits in FIN_WAIT2 for the client's FIN until then. Not
  // every one stays in TIME_WAIT: when other programs' connections make the
  // kernel's choice of client port wrap around its range, a SYN from a reused
  // port ends the server's TIME_WAIT for it and opens the new connection. Had
  // the client closed first, the server would hold none.
  std::size_t server_side = 0, client_side = 0;
  wait_for([&] {
    std::tie(server_side, client_side) = time_waits(port_of(server));
    return server_side >= 2 * flows;
  });
  EXPECT_EQ(client_side, 0u);
  EXPECT_GE(server_side, flows);
}

// A server of this wire version that acknowledges every push flow and never
// closes a connection, `last` flag or not. It counts the connections open
// when it is quiet (20 ms without an event): then every close the client
// made has been read, so what is open is what the client holds.
class NeverClosingServer {
 public:
  NeverClosingServer() : listener_(listen_tcp(resolve_address("127.0.0.1:0", 0, "test"), false)) {
    sockaddr_in a{};
    socklen_t length = sizeof a;
    getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&a), &length);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~NeverClosingServer() {
    stop_ = true;
    thread_.join();
  }
  NeverClosingServer(const NeverClosingServer&) = delete;
  NeverClosingServer& operator=(const NeverClosingServer&) = delete;

  std::uint16_t port() const { return port_; }
  std::uint64_t closed_by_client() const { return closed_; }
  std::uint64_t most_open_when_quiet() const { return most_quiet_open_; }
  // Of the connections the client closed, the first one's place in the order of accepting.
  std::uint64_t first_closed() const { return first_closed_; }

 private:
  struct Peer {
    Fd fd;
    std::uint64_t accepted = 0;  // its place in the order of accepting
    HeaderBytes header{};
    std::size_t have = 0;       // header bytes read
    std::uint64_t payload = 0;  // payload bytes still to read
  };

  void serve() {
    const Fd ep(epoll_create1(0));
    epoll_event ev{EPOLLIN, {.ptr = nullptr}};
    epoll_ctl(ep.get(), EPOLL_CTL_ADD, listener_.get(), &ev);
    std::map<Peer*, std::unique_ptr<Peer>> peers;
    std::array<epoll_event, 256> events{};
    std::vector<char> sink(1 << 16);
    std::uint64_t accepted = 0;
    while (!stop_) {
      const int n = epoll_wait(ep.get(), events.data(), events.size(), 20);
      if (n == 0) most_quiet_open_ = std::max<std::uint64_t>(most_quiet_open_, peers.size());
      for (int i = 0; i < n; ++i) {
        auto* peer = static_cast<Peer*>(events[i].data.ptr);
        if (peer == nullptr) {
          for (int fd; (fd = accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK)) >= 0;) {
            auto p = std::make_unique<Peer>();
            p->fd = Fd(fd);
            p->accepted = accepted++;
            epoll_event e{EPOLLIN, {.ptr = p.get()}};
            epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd, &e);
            peers.emplace(p.get(), std::move(p));
          }
          continue;
        }
        if (!read_from(*peer, sink)) {
          if (closed_++ == 0) first_closed_ = peer->accepted;
          peers.erase(peer);
        }
      }
    }
  }

  // False when the client closed (or broke) the connection.
  static bool read_from(Peer& p, std::vector<char>& sink) {
    while (true) {
      ssize_t got = 0;
      if (p.have < kFlowHeaderBytes) {
        got = recv(p.fd.get(), p.header.data() + p.have, kFlowHeaderBytes - p.have, 0);
      } else {
        got = recv(p.fd.get(), sink.data(), std::min<std::uint64_t>(p.payload, sink.size()), 0);
      }
      if (got == 0) return false;
      if (got < 0) return errno == EAGAIN;
      if (p.have < kFlowHeaderBytes) {
        p.have += static_cast<std::size_t>(got);
        if (p.have < kFlowHeaderBytes) continue;
        const auto header = decode(p.header, nullptr);
        if (!header || header->direction != Direction::push) return false;
        p.payload = header->size_bytes;
      } else {
        p.payload -= static_cast<std::uint64_t>(got);
      }
      if (p.have == kFlowHeaderBytes && p.payload == 0) {
        const auto ack = encode_ack(decode(p.header, nullptr)->flow_id);
        if (send(p.fd.get(), ack.data(), ack.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(ack.size())) return false;
        p.have = 0;
      }
    }
  }

  Fd listener_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> closed_{0}, first_closed_{0}, most_quiet_open_{0};
  std::thread thread_;
};

// A connection per flow to a server that never closes: the client keeps at
// most tcp::kMaxAwaitingClose sockets waiting for the server's close, closing
// the oldest itself past that, and still finishes every flow and the run.
TEST(Loopback, PerFlowSocketsAwaitingAServersCloseAreCapped) {
  constexpr std::uint64_t kFlows = tcp::kMaxAwaitingClose + 2'000;
  constexpr std::size_t kInFlight = 16;
  // Both ends in this process: a descriptor per connection on each side.
  if (raise_open_file_limit() < kFlows + tcp::kMaxAwaitingClose + 1'000) {
    GTEST_SKIP() << "needs an open-file limit of " << kFlows + tcp::kMaxAwaitingClose + 1'000 << " (ulimit -Hn)";
  }
  TempDir dir;
  {
    std::ofstream out(dir.file("s.csv"));
    out << "# xtk-schedule\n# format_version=1\n# duration_ns=200000000\nflow_id,start_ns,src,dst,size_bytes\n";
    for (std::uint64_t i = 0; i < kFlows; ++i) out << i << "," << i * 30'000 << ",h0,127.0.0.1,100\n";
  }
  NeverClosingServer server;
  ClientOptions o;
  o.schedule = dir.file("s.csv");
  o.records = dir.file("r.csv");
  o.port = server.port();
  o.prepare_ns = 100'000'000;
  o.retry_ns = 300'000'000;
  o.policy = ConnectionPolicy::per_flow;
  o.pool_limit = kInFlight;
  std::atomic<bool> interrupt{false};
  const auto result = run_client(o, interrupt);
  EXPECT_EQ(result.summary.flows_with(FlowStatus::ok), kFlows);
  // Every socket is closed once the client is done: those past the cap
  // during the run, the rest after the end's 200 ms wait for the server,
  // quiet time in which the server counts what the client holds.
  wait_for([&] { return server.closed_by_client() == kFlows; });
  EXPECT_EQ(server.closed_by_client(), kFlows);
  // Without the cap all kFlows would be open then.
  EXPECT_GE(server.most_open_when_quiet(), tcp::kMaxAwaitingClose);
  EXPECT_LE(server.most_open_when_quiet(), tcp::kMaxAwaitingClose + kInFlight);
  EXPECT_LT(server.first_closed(), kInFlight) << "the oldest goes first";
}

// A burst: 8 flows due at the same microsecond. With --pool-ahead the pool
// holds a connection for each before they are due, so none waits for a
// handshake; without it (and no spares) every one of them does.
TEST(Loopback, PoolAheadHasAConnectionReadyForEveryFlowOfABurst) {
  TempDir dir;
  Server server(loopback_server());
  server.start();
  {
    std::ofstream out(dir.file("burst.csv"));
    out << "# xtk-schedule\n# format_version=1\n# duration_ns=300000000\nflow_id,start_ns,src,dst,size_bytes\n";
    for (int i = 0; i < 8; ++i) out << i << ",200000000,h0,127.0.0.1,20000\n";
  }
  for (const std::int64_t ahead_ns : {std::int64_t{100'000'000}, std::int64_t{0}}) {
    auto o = client_for(server, dir.file("burst.csv"), dir.file("r.csv"));
    o.pool_init = 0;
    o.pool_ahead_ns = ahead_ns;
    std::atomic<bool> interrupt{false};
    const auto result = run_client(o, interrupt);
    EXPECT_EQ(result.summary.flows_with(FlowStatus::ok), 8u);
    const auto j = result.summary.to_json();
    EXPECT_EQ(j["connection_waits"], ahead_ns > 0 ? 0 : 8) << "pool_ahead_ns " << ahead_ns;
    // Loopback handshakes take well under a millisecond: the look-ahead stays
    // about what was asked (with 0, twice what the handshakes took).
    EXPECT_GE(j["pool_ahead_ns"].get<std::int64_t>(), ahead_ns);
    EXPECT_LT(j["pool_ahead_ns"].get<std::int64_t>(), ahead_ns + 5'000'000);
  }
}

// More flows due at once than a worker's ring holds: the feeder waits for
// room and hands every flow out in order.
TEST(Loopback, FlowsBeyondAFullWorkerRingAllStart) {
  TempDir dir;
  Server server(loopback_server());
  server.start();
  const std::uint64_t flows = client_detail::kWorkerRingFlows + 20'000;
  {
    std::ofstream out(dir.file("due.csv"));
    out << "# xtk-schedule\n# format_version=1\n# duration_ns=1000\nflow_id,start_ns,src,dst,size_bytes\n";
    for (std::uint64_t i = 0; i < flows; ++i) out << i << ",0,h0,127.0.0.1,100\n";
  }
  auto o = client_for(server, dir.file("due.csv"), dir.file("r.csv"));
  o.pool_init = 4;
  o.pool_limit = 4;
  std::atomic<bool> interrupt{false};
  const auto result = run_client(o, interrupt);
  std::uint64_t total = 0;
  const auto by_status = statuses(dir.file("r.csv"), &total);
  EXPECT_EQ(total, flows);
  EXPECT_EQ(by_status.at("ok"), flows);
  wait_for([&] { return server.counters().push_flows == flows; });
  EXPECT_EQ(server.counters().push_flows, flows);
  // Late for want of a connection (4 for all of them), not for the feeder's
  // full ring or the worker.
  const auto& late = result.summary.late_starts();
  EXPECT_EQ(late.total(), result.summary.flows_late_over_100us());
  EXPECT_GT(late.flows(LateCause::connection), late.total() * 99 / 100) << late.describe();
  EXPECT_EQ(late.max_cause(), LateCause::connection) << late.describe();
}

// A flow handed over to a worker that sleeps with an empty ring (as when the
// feeder was held up on its CPU) wakes it through its doorbell: without it,
// the worker would sleep out its idle wait (5 ms) and start the flow up to
// 4.5 ms late.
TEST(Loopback, AFlowHandedToASleepingWorkerWakesIt) {
  Server server(loopback_server());
  server.start();
  ClientOptions o = client_for(server, "", "");
  client_detail::Shared shared(o);
  for_one_worker(shared, port_of(server));
  client_detail::Worker worker(shared, 0);
  worker.start({});
  constexpr int kFlows = 10;
  for (int i = 0; i < kFlows; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(7'300));  // somewhere in the worker's idle wait
    client_detail::PlannedFlow flow;
    flow.id = static_cast<std::uint64_t>(i);
    flow.sched_ns = monotonic_ns() + 500'000 - shared.start_mono_ns;
    flow.size_bytes = 100;
    ASSERT_TRUE(worker.ring().push(flow));
    worker.handed(shared.start_mono_ns + flow.sched_ns);
  }
  shared.feeding_done.store(true);
  worker.join();
  ASSERT_EQ(shared.finished.flows.size(), static_cast<std::size_t>(kFlows));
  for (const auto& f : shared.finished.flows) {
    EXPECT_EQ(f.status, FlowStatus::ok) << (f.error != 0 ? shared.finished.errors[f.error - 1] : "");
    EXPECT_LT(f.start_abs - (shared.start_mono_ns + f.plan.sched_ns), 2'500'000) << "flow " << f.plan.id;
  }
}

// The data segments each flow arrived in, by flow id: the test is the server,
// reading every connection made to `listener` until `flows` flows were
// acknowledged. On loopback a `send` of a few KiB is one segment.
std::map<std::uint64_t, std::uint32_t> segments_per_flow(int listener, std::size_t flows) {
  std::map<std::uint64_t, std::uint32_t> out;
  std::vector<pollfd> fds{{listener, POLLIN, 0}};
  std::map<int, std::uint32_t> segments_before;  // a pool's connection carries flow after flow
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (out.size() < flows && std::chrono::steady_clock::now() < until) {
    if (poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (std::size_t i = fds.size(); i-- > 0;) {
      if ((fds[i].revents & POLLIN) == 0) continue;
      if (fds[i].fd == listener) {
        const int fd = accept(listener, nullptr, nullptr);  // blocking: the reads below wait for whole flows
        if (fd >= 0) fds.push_back({fd, POLLIN, 0});
        continue;
      }
      HeaderBytes header{};
      if (recv(fds[i].fd, header.data(), header.size(), MSG_WAITALL) != static_cast<ssize_t>(header.size())) {
        ::close(fds[i].fd);
        fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      const auto flow = decode(header, nullptr);
      EXPECT_TRUE(flow.has_value());
      if (!flow) return out;
      std::vector<char> payload(flow->size_bytes);
      EXPECT_EQ(recv(fds[i].fd, payload.data(), payload.size(), MSG_WAITALL), static_cast<ssize_t>(payload.size()));
      tcp_info info{};
      socklen_t len = sizeof info;
      EXPECT_EQ(getsockopt(fds[i].fd, IPPROTO_TCP, TCP_INFO, &info, &len), 0);
      out[flow->flow_id] = info.tcpi_data_segs_in - segments_before[fds[i].fd];
      segments_before[fds[i].fd] = info.tcpi_data_segs_in;
      const AckBytes ack = encode_ack(flow->flow_id);
      EXPECT_EQ(send(fds[i].fd, ack.data(), ack.size(), MSG_NOSIGNAL), static_cast<ssize_t>(ack.size()));
    }
  }
  for (std::size_t i = 1; i < fds.size(); ++i) ::close(fds[i].fd);  // fds[0]: the caller's listener
  return out;
}

// A flow's first write is small only when the flow after it is due within
// about a write's time: a flow with no successor leaves in one `send`, the
// first of a close pair sends 4 KiB and the rest after its successor starts.
TEST(Loopback, OnlyAFlowWithASuccessorDueSoonStartsWithASmallWrite) {
  const Fd listener = listen_tcp(resolve_address("127.0.0.1:0", 0, "test"), false);
  sockaddr_in a{};
  socklen_t alen = sizeof a;
  ASSERT_EQ(getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &alen), 0);
  ClientOptions o;
  o.pool_init = 0;  // a connection per flow due, opened ahead
  client_detail::Shared shared(o);
  for_one_worker(shared, ntohs(a.sin_port));
  client_detail::Worker worker(shared, 0);
  worker.start({});
  // Flow 1 alone; flows 2 and 3 a close pair (10 us apart), 100 ms after it.
  const std::array<std::int64_t, 3> due_us{100'000, 200'000, 200'010};
  for (std::size_t i = 0; i < due_us.size(); ++i) {
    client_detail::PlannedFlow flow;
    flow.id = i + 1;
    flow.sched_ns = due_us[i] * 1'000;
    flow.size_bytes = 8'192;  // one segment when sent whole
    ASSERT_TRUE(worker.ring().push(flow));
  }
  worker.handed(shared.start_mono_ns + due_us[0] * 1'000);
  shared.feeding_done.store(true);
  const auto segments = segments_per_flow(listener.get(), due_us.size());
  worker.join();
  ASSERT_EQ(shared.finished.flows.size(), due_us.size());
  for (const auto& f : shared.finished.flows) EXPECT_EQ(f.status, FlowStatus::ok) << "flow " << f.plan.id;
  ASSERT_EQ(segments.size(), due_us.size());
  EXPECT_EQ(segments.at(1), 1U) << "a flow with no successor: header and payload in one send";
  EXPECT_GE(segments.at(2), 2U) << "the first of a close pair: 4 KiB first, the rest after the second starts";
  EXPECT_EQ(segments.at(3), 1U) << "the second of the pair has no successor";
}

TEST(Loopback, ServerGoneMidRunEveryFlowStillHasARecord) {
  TempDir dir;
  auto server = std::make_unique<Server>(loopback_server());
  server->start();
  const auto flows = write_schedule_file(dir.file("s.csv"), 100e6, 1'500'000'000);
  auto o = client_for(*server, dir.file("s.csv"), dir.file("r.csv"));
  std::atomic<bool> interrupt{false};
  std::thread killer([&] {
    std::this_thread::sleep_for(600ms);
    server.reset();  // listeners and every connection close
  });
  const auto result = run_client(o, interrupt);
  killer.join();
  std::uint64_t total = 0;
  const auto by_status = statuses(dir.file("r.csv"), &total);
  EXPECT_EQ(total, flows);
  EXPECT_GT(by_status.count("ok") ? by_status.at("ok") : 0, 0u);
  EXPECT_GT(by_status.count("failed") ? by_status.at("failed") : 0, 0u);
  EXPECT_EQ(result.summary.flows(), flows);
}

TEST(Loopback, InterruptCancelsTheRestAndLosesNothing) {
  TempDir dir;
  Server server(loopback_server());
  server.start();
  const auto flows = write_schedule_file(dir.file("s.csv"), 100e6, 3'000'000'000);
  auto o = client_for(server, dir.file("s.csv"), dir.file("r.csv"));
  o.grace_ns = 200'000'000;
  std::atomic<bool> interrupt{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(700ms);
    interrupt.store(true);
  });
  const auto start = std::chrono::steady_clock::now();
  const auto result = run_client(o, interrupt);
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2500ms);  // not the whole 3 s schedule
  EXPECT_TRUE(result.interrupted);
  std::uint64_t total = 0;
  const auto by_status = statuses(dir.file("r.csv"), &total);
  EXPECT_EQ(total, flows);
  EXPECT_GT(by_status.at("ok"), 0u);
  EXPECT_GT(by_status.at("cancelled"), flows / 2);
}

TEST(Loopback, BulkStreamsRunForTheDuration) {
  TempDir dir;
  Server server(loopback_server());
  server.start();
  ClientOptions o;
  o.records = dir.file("r.csv");
  o.bulk_streams = 2;
  o.bulk_dst = "127.0.0.1:" + std::to_string(port_of(server));
  o.duration_ns = 400'000'000;
  o.prepare_ns = 50'000'000;
  o.flow_timeout_ns = 100'000'000;  // a stream's timeout counts from its stop time, not its start
  std::atomic<bool> interrupt{false};
  const auto result = run_client(o, interrupt);
  EXPECT_EQ(result.summary.flows_with(FlowStatus::ok), 2u);
  EXPECT_GT(result.summary.goodput_bps(), 100e6);
  wait_for([&] { return server.counters().streams == 2; });
  EXPECT_EQ(server.counters().streams, 2u);
  // No start times to keep: no SCHED_FIFO (it would take the CPU from the streams' own packets).
  EXPECT_EQ(result.timing["realtime"], false);
  EXPECT_TRUE(result.timing["cpu_wake_latency_ns"].is_null());
}

// Two streams on one worker take turns. On loopback a send never fills its
// socket's buffer, so a stream that sent until EAGAIN kept the worker to
// itself: the other moved 0.6 to 80 % of its bytes (six runs before the fix).
TEST(Loopback, StreamsOnOneWorkerShareIt) {
  TempDir dir;
  Server server(loopback_server(1));
  server.start();
  ClientOptions o;
  o.records = dir.file("r.csv");
  o.bulk_streams = 2;
  o.threads = 1;
  o.bulk_dst = "127.0.0.1:" + std::to_string(port_of(server));
  o.duration_ns = 500'000'000;
  o.prepare_ns = 50'000'000;
  std::atomic<bool> interrupt{false};
  run_client(o, interrupt);
  const auto records = records_in(dir.file("r.csv"));
  ASSERT_EQ(records.size(), 2u);
  const auto [fewer, more] = std::minmax(records[0].size_bytes, records[1].size_bytes);
  EXPECT_GT(static_cast<double>(fewer), 0.9 * static_cast<double>(more)) << fewer << " against " << more << " bytes";
}

// Two large pulls due together from one server thread to one client worker
// share both: they end together (before the fix the first took 0.47-0.58 of
// the second's time).
TEST(Loopback, PullsFromOneServerThreadEndTogether) {
  TempDir dir;
  Server server(loopback_server(1));
  server.start();
  {
    std::ofstream out(dir.file("pulls.csv"));
    out << "# xtk-schedule\n# format_version=1\nflow_id,start_ns,src,dst,size_bytes\n";
    for (int i = 0; i < 2; ++i) out << i << ",0,h0,127.0.0.1,1000000000\n";
  }
  auto o = client_for(server, dir.file("pulls.csv"), dir.file("r.csv"));
  o.direction = Direction::pull;
  o.threads = 1;
  std::atomic<bool> interrupt{false};
  run_client(o, interrupt);
  const auto records = records_in(dir.file("r.csv"));
  ASSERT_EQ(records.size(), 2u);
  ASSERT_EQ(records[0].status, FlowStatus::ok);
  ASSERT_EQ(records[1].status, FlowStatus::ok);
  const double first = std::min(records[0].fct_us(), records[1].fct_us());
  const double last = std::max(records[0].fct_us(), records[1].fct_us());
  EXPECT_GT(first, 0.9 * last) << "FCTs " << first << " and " << last << " us";
}

// Replays a good schedule with `bad_line` appended: the client stops with an
// InputError (returned) naming the schedule and its line, and every flow read
// before the bad line has its record.
std::string replay_until_its_error(const TempDir& dir, std::uint64_t flows_before) {
  Server server(loopback_server());
  server.start();
  auto o = client_for(server, dir.file("s.csv"), dir.file("r.csv"));
  std::atomic<bool> interrupt{false};
  std::string error = "no error";
  try {
    run_client(o, interrupt);
  } catch (const InputError& e) {
    error = e.what();
  }
  std::uint64_t total = 0;
  statuses(dir.file("r.csv"), &total);
  EXPECT_EQ(total, flows_before) << error;
  EXPECT_EQ(error.rfind(dir.file("s.csv") + ":", 0), 0u) << error;  // file:line first
  return error;
}

std::string replay_with_bad_line(const std::string& bad_line) {
  TempDir dir;
  const auto flows = write_schedule_file(dir.file("s.csv"), 50e6, 300'000'000);
  std::ofstream(dir.file("s.csv"), std::ios::app) << bad_line << "\n";
  return replay_until_its_error(dir, flows);
}

TEST(Loopback, BadScheduleLineMidRunStopsCleanlyWithTheRecordsSoFar) {
  const auto error = replay_with_bad_line("999999,999999999,h0,127.0.0.1,not-a-size");
  EXPECT_NE(error.find("size_bytes 'not-a-size'"), std::string::npos) << error;
}

// A destination whose port is not a port: the error names the schedule's line.
TEST(Loopback, BadDestinationPortNamesTheScheduleLine) {
  const auto error = replay_with_bad_line("999999,999999999,h0,127.0.0.1:99999,1000");
  EXPECT_NE(error.find("port '99999'"), std::string::npos) << error;
}

TEST(Loopback, RepeatedFlowIdNamesTheScheduleLine) {
  const auto error = replay_with_bad_line("0,999999999,h0,127.0.0.1,1000");
  EXPECT_NE(error.find("flow_id 0 is not above the previous flow's"), std::string::npos) << error;
}

// ss(8)'s info lines (which hold the congestion control's name) of the
// sockets that send flows' data: the client's (peer port `port`) for a push,
// the server's (local port `port`) for a pull.
std::string sending_socket_info(std::uint16_t port, Direction direction) {
  const auto out = run_command({"ss", "-tinH", "state", "established"}).output;
  const std::string address = fmt::format("127.0.0.1:{}", port);
  std::string infos;
  std::istringstream lines(out);
  for (std::string line, info; std::getline(lines, line) && std::getline(lines, info);) {
    std::istringstream fields(line);
    std::string recv_q, send_q, self, peer;
    fields >> recv_q >> send_q >> self >> peer;
    if ((direction == Direction::push ? peer : self) == address) infos += info + " \n";
  }
  return infos;
}

// The first record's FCT in seconds.
double first_fct_s(const std::string& records) {
  std::ifstream in(records);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line.rfind("flow_id,", 0) == 0) continue;
    std::size_t pos = 0;
    for (int i = 0; i < 6; ++i) pos = line.find(',', pos) + 1;
    return std::stod(line.substr(pos)) / 1e6;
  }
  return 0;
}

// A schedule's cc column sets each flow's algorithm on the socket sending its
// data, and its rate_bps paces that socket: the client's for a push, the
// server's for a pull (both carried in the flow's header).
TEST(Loopback, PerFlowCongestionControlAndPacingAreOnTheSendingSocket) {
  if (!run_command({"ss", "-V"}).ok()) GTEST_SKIP() << "ss (iproute2) is not installed";
  ASSERT_NE(default_congestion_control(), "reno");  // else the check below proves nothing
  TempDir dir;
  Server server(loopback_server());
  server.start();
  const auto port = port_of(server);
  // 1 MB paced to 8 Mbit/s: about a second, so ss sees the flow's socket.
  std::ofstream(dir.file("s.csv")) << "# xtk-schedule\n# format_version=1\n"
                                      "flow_id,start_ns,src,dst,size_bytes,rate_bps,cc\n"
                                      "0,0,h0,127.0.0.1,1000000,8000000,reno\n";
  for (auto direction : {Direction::push, Direction::pull}) {
    auto o = client_for(server, dir.file("s.csv"), dir.file("r.csv"));
    o.direction = direction;
    std::atomic<bool> interrupt{false};
    auto client = std::async(std::launch::async, [&] { return run_client(o, interrupt); });
    std::string info;
    wait_for([&] {
      info = sending_socket_info(port, direction);
      return info.find(" reno ") != std::string::npos;
    });
    const auto result = client.get();
    EXPECT_NE(info.find(" reno "), std::string::npos) << "direction " << static_cast<int>(direction) << ": " << info;
    EXPECT_EQ(result.summary.flows_with(FlowStatus::ok), 1u);
    EXPECT_TRUE(result.warnings.empty());
    // Unpaced, 1 MB takes about a millisecond here; paced, the kernel still
    // lets the first window and whole 64 KB segments out at once, so less than 1 s.
    const double fct = first_fct_s(dir.file("r.csv"));
    EXPECT_GT(fct, 0.25) << "not paced, direction " << static_cast<int>(direction);
    EXPECT_LT(fct, 3.0);
  }
  EXPECT_EQ(server.counters().option_failures, 0u);
}

// A name the kernel refuses ends the replay at the schedule's line, saying what it has.
TEST(Loopback, CongestionControlTheKernelRefusesNamesTheScheduleLine) {
  TempDir dir;
  std::ofstream(dir.file("s.csv")) << "# xtk-schedule\n# format_version=1\n"
                                      "flow_id,start_ns,src,dst,size_bytes,cc\n"
                                      "0,0,h0,127.0.0.1,1000,\n"
                                      "1,1000,h0,127.0.0.1,1000,nosuchcc\n";
  const auto error = replay_until_its_error(dir, 1);
  EXPECT_EQ(error.rfind(dir.file("s.csv") + ":5: cc: this kernel has no congestion control 'nosuchcc' (available: ", 0),
            0u)
      << error;
}

using testing::cpu_wake_latency_target;

bool some_thread_is(int policy) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    if (sched_getscheduler(std::stoi(task.path().filename().string())) == policy) return true;
  }
  return false;
}
bool some_thread_is_fifo() { return some_thread_is(SCHED_FIFO); }

// A schedule of `count` 1000-byte flows to 127.0.0.1, `gap_ns` apart.
void write_spaced_flows(const std::string& path, int count, std::int64_t gap_ns) {
  std::ofstream schedule(path);
  schedule << "# xtk-schedule\n# format_version=1\nflow_id,start_ns,src,dst,size_bytes\n";
  for (int i = 0; i < count; ++i) schedule << fmt::format("{},{},h0,127.0.0.1,1000\n", i, i * gap_ns);
}

// Without flags, as root: a SCHED_FIFO worker and idle CPUs polling while the
// client runs, both released when it ends (issue 19). Where the kernel has no
// cpuidle driver, the polling is the client's own: a SCHED_IDLE thread on
// each CPU the worker may use.
TEST(Loopback, DefaultTimingIsSchedFifoAndPmQosAsRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  TempDir dir;
  Server server(loopback_server());
  server.start();
  write_spaced_flows(dir.file("s.csv"), 10, 150'000'000);  // over 1.5 s: long enough to look at the threads
  ASSERT_FALSE(some_thread_is_fifo());
  std::atomic<bool> interrupt{false};
  auto o = client_for(server, dir.file("s.csv"), dir.file("r.csv"));
  auto client = std::async(std::launch::async, [&] { return run_client(o, interrupt); });
  const bool halts = read_first_line("/sys/devices/system/cpu/cpuidle/current_driver") == "none";
  const bool polled_here = halts && cgroup_cpu_quota().empty();
  bool fifo = false, polling = false, idle_pollers = false;
  wait_for([&] {
    fifo = fifo || some_thread_is_fifo();
    polling = polling || cpu_wake_latency_target() == 0;
    idle_pollers = idle_pollers || some_thread_is(SCHED_IDLE);
    return fifo && polling && idle_pollers == polled_here;
  });
  const auto result = client.get();
  EXPECT_TRUE(fifo);
  EXPECT_TRUE(polling);
  EXPECT_EQ(idle_pollers, polled_here);
  EXPECT_FALSE(some_thread_is_fifo());
  EXPECT_FALSE(some_thread_is(SCHED_IDLE));
  EXPECT_EQ(result.timing["idle_poll_cpus"], polled_here ? nlohmann::json(allowed_cpus()) : nlohmann::json::array());
  EXPECT_EQ(result.summary.flows_with(FlowStatus::ok), 10u);
  EXPECT_EQ(result.timing["realtime"], true);
  EXPECT_EQ(result.timing["cpu_wake_latency_ns"], 0);
  EXPECT_EQ(result.timing["worker_cpus_why"], "not pinned: lo takes no device interrupts");
  EXPECT_TRUE(result.timing["lacking"].is_null());
  EXPECT_TRUE(result.warnings.empty());
}

// A worker that cannot sleep (a backlog of 1 KB flows far above what the
// machine does) gives SCHED_FIFO up while busy: it would starve the rest of
// its CPU, the kernel's processing of its own packets first.
TEST(Loopback, ABusyWorkerGivesUpSchedFifo) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  TempDir dir;
  Server server(loopback_server());
  server.start();
  write_spaced_flows(dir.file("s.csv"), 100'000, 1);
  std::atomic<bool> interrupt{false};
  auto o = client_for(server, dir.file("s.csv"), dir.file("r.csv"));
  auto client = std::async(std::launch::async, [&] { return run_client(o, interrupt); });
  // From 50 ms after time zero until the backlog is done: mostly no SCHED_FIFO thread.
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  int samples = 0, fifo = 0;
  while (client.wait_for(std::chrono::milliseconds(5)) != std::future_status::ready) {
    ++samples;
    fifo += some_thread_is_fifo() ? 1 : 0;
  }
  const auto result = client.get();
  EXPECT_EQ(result.timing["realtime"], true);
  EXPECT_EQ(result.summary.flows_with(FlowStatus::ok), 100'000u);
  ASSERT_GT(samples, 20) << "the backlog took too short a time to look at";
  EXPECT_LT(fifo, samples / 5) << fifo << " of " << samples << " samples saw a SCHED_FIFO thread";
}

// The same binary as an unprivileged user: it runs, and says in one line
// what it lacked; with the choices turned off it asks for nothing and says nothing.
TEST(Loopback, WithoutRootTheClientSaysWhatTimingItLacked) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to become an unprivileged user";
  if (!run_command({"setpriv", "--version"}).ok()) GTEST_SKIP() << "setpriv (util-linux) is not installed";
  TempDir dir;
  std::filesystem::permissions(dir.file(""), std::filesystem::perms::all);
  Server server(loopback_server());
  server.start();
  std::ofstream(dir.file("s.csv")) << "# xtk-schedule\n# format_version=1\nflow_id,start_ns,src,dst,size_bytes\n"
                                      "0,0,h0,127.0.0.1,1000\n1,10000000,h0,127.0.0.1,1000\n";
  const std::vector<std::string> as_nobody{"setpriv",        "--reuid=nobody",  "--regid=nogroup",
                                           "--clear-groups", "--inh-caps=-all", XTK_CLIENT_BIN};
  const auto run = [&](std::vector<std::string> extra) {
    auto argv = as_nobody;
    for (const auto& word : {dir.file("s.csv"), std::string("-p"), std::to_string(port_of(server)), std::string("-o"),
                             dir.file("r.csv"), std::string("--json")}) {
      argv.push_back(word);
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_command(argv);
  };
  auto r = run({});
  ASSERT_TRUE(r.ok()) << r.output;
  const std::string lacking =
      "timing: no SCHED_FIFO (needs root or CAP_SYS_NICE) and no PM QoS request (needs root): flow starts may be "
      "hundreds of microseconds late instead of tens";
  EXPECT_NE(r.output.find("xtk-client: " + lacking), std::string::npos) << r.output;
  const auto json = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(json["timing"]["realtime"], false);
  EXPECT_TRUE(json["timing"]["cpu_wake_latency_ns"].is_null());
  EXPECT_EQ(json["timing"]["lacking"].get<std::string>().rfind(lacking, 0), 0u);
  EXPECT_EQ(json["summary"]["flows_by_status"]["ok"], 2);

  r = run({"--no-realtime", "--cpus", "none", "--cpu-wake-latency", "none"});
  ASSERT_TRUE(r.ok()) << r.output;
  EXPECT_EQ(r.output.find("timing:"), std::string::npos) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output)["timing"]["description"],
            "normal priority; workers not pinned: --cpus none; no PM QoS request");
}

// xtk-server as a child with one system call refused (xtk-test-without-syscall).
class ServerWithout {
 public:
  explicit ServerWithout(const char* syscall)
      : child_({XTK_WITHOUT_SYSCALL_BIN, syscall, XTK_SERVER_BIN, "--listen", "127.0.0.1:0"}, "",
               ChildOptions{.talk = true}) {}
  // The port its first line names; empty when it said none.
  std::string port() {
    const auto listening = child_.read_line(10s);
    const auto colon = listening ? listening->find("127.0.0.1:") : std::string::npos;
    if (colon == std::string::npos) return "";
    return listening->substr(colon + 10, listening->find(' ', colon) - colon - 10);
  }
  // Stops it: its "# final:" line, empty when none came.
  std::string stop() {
    child_.signal(SIGTERM);
    std::optional<std::string> line;
    while ((line = child_.read_line(5s)) && line->find("# final:") == std::string::npos) {
    }
    status_ = child_.wait(5s);
    return line.value_or("");
  }
  std::optional<int> status() const { return status_; }
  std::string unread() { return child_.unread(); }

 private:
  ChildProcess child_;
  std::optional<int> status_;
};

// Linux before 5.11 (RHEL 8's 4.18, on many clusters) has no epoll_pwait2: both
// tools then wait with epoll_wait and a timerfd. Every flow still ends, each
// starts on time, and neither worker spins between starts.
TEST(Loopback, WithoutEpollPwait2EveryFlowEndsOnTimeAndNoWorkerSpins) {
  TempDir dir;
  {
    std::ofstream s(dir.file("s.csv"));
    s << "# xtk-schedule\n# format_version=1\nflow_id,start_ns,src,dst,size_bytes\n";
    for (int i = 0; i < 300; ++i) s << fmt::format("{},{},h0,127.0.0.1,1000\n", i, i * 5'000'000);
  }
  ServerWithout server("epoll_pwait2");
  const std::string port = server.port();
  ASSERT_FALSE(port.empty()) << server.unread();
  rusage before{};
  getrusage(RUSAGE_CHILDREN, &before);
  const auto started = std::chrono::steady_clock::now();
  // No PM QoS request: without a cpuidle driver the client would keep it by
  // polling every CPU, and its CPU time would read that, not its worker.
  const auto r = run_command({XTK_WITHOUT_SYSCALL_BIN, "epoll_pwait2", XTK_CLIENT_BIN, dir.file("s.csv"), "-p", port,
                              "-o", dir.file("r.csv"), "--json", "--no-progress", "--cpu-wake-latency", "none"});
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  rusage after{};
  getrusage(RUSAGE_CHILDREN, &after);
  ASSERT_TRUE(r.ok()) << r.output;
  const auto json = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(json["summary"]["flows_by_status"]["ok"], 300) << r.output;
  // Between starts 5 ms apart the worker sleeps on the timer: a wait that
  // rounded its deadline to epoll_wait's milliseconds would start flows up to
  // a millisecond late (down: it would spin instead).
  EXPECT_LT(json["summary"]["lateness_us"]["p50"].get<double>(), 50.0) << r.output;
  const auto cpu_s = [](const rusage& u) {
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  };
  EXPECT_LT(cpu_s(after) - cpu_s(before), 0.5 * wall_s) << "the client spun: " << r.output;
  const std::string final_line = server.stop();
  EXPECT_NE(final_line.find("flows push 300 "), std::string::npos) << final_line << server.unread();
  EXPECT_EQ(server.status(), 0);
}

// Where the kernel refuses io_uring (a seccomp profile, an old kernel), both
// tools send at once: 1 KB flows all due together, which the batch would
// otherwise carry (transport.hpp, Poller::send_later), all end.
TEST(Loopback, WithoutIoUringEveryFlowEnds) {
  TempDir dir;
  {
    std::ofstream s(dir.file("s.csv"));
    s << "# xtk-schedule\n# format_version=1\nflow_id,start_ns,src,dst,size_bytes\n";
    for (int i = 0; i < 2000; ++i) s << fmt::format("{},0,h0,127.0.0.1,1000\n", i);
  }
  ServerWithout server("io_uring_setup");
  const std::string port = server.port();
  ASSERT_FALSE(port.empty()) << server.unread();
  const auto r = run_command({XTK_WITHOUT_SYSCALL_BIN, "io_uring_setup", XTK_CLIENT_BIN, dir.file("s.csv"), "-p", port,
                              "--pool-limit", "8", "-o", dir.file("r.csv"), "--json", "--no-progress"});
  ASSERT_TRUE(r.ok()) << r.output;
  const auto json = nlohmann::json::parse(r.output.substr(r.output.find('{')));
  EXPECT_EQ(json["summary"]["flows_by_status"]["ok"], 2000) << r.output;
  const std::string final_line = server.stop();
  EXPECT_NE(final_line.find("flows push 2000 "), std::string::npos) << final_line << server.unread();
  EXPECT_EQ(server.status(), 0);
}

TEST(Loopback, UnreachableServerFailsFlowsWithTheReason) {
  TempDir dir;
  const auto flows = write_schedule_file(dir.file("s.csv"), 10e6, 200'000'000);
  ClientOptions o;
  o.schedule = dir.file("s.csv");
  o.records = dir.file("r.csv");
  o.port = 1;  // nothing listens there
  o.prepare_ns = 50'000'000;
  o.retry_ns = 200'000'000;
  std::atomic<bool> interrupt{false};
  const auto result = run_client(o, interrupt);
  EXPECT_EQ(result.summary.flows_with(FlowStatus::failed), flows);
  std::ifstream in(dir.file("r.csv"));
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("connect to 127.0.0.1:1: Connection refused (retried for"), std::string::npos);
}

TEST(ServerBounds, BadPeersCostOnlyTheirConnection) {
  auto options = loopback_server();
  options.token = token_from_phrase("letmein");
  options.max_flow_bytes = 1 << 20;
  options.header_timeout_ns = 200'000'000;
  Server server(options);
  server.start();
  const std::uint16_t port = port_of(server);
  const std::uint64_t token = token_from_phrase("letmein");

  // Garbage instead of a header.
  int fd = connect_loopback(port);
  std::string garbage(kFlowHeaderBytes, 'G');
  send(fd, garbage.data(), garbage.size(), 0);
  EXPECT_TRUE(closed_by_peer(fd));
  ::close(fd);
  // The right header with the wrong token, and a flow above the limit.
  EXPECT_FALSE(push_by_hand(port, 100, token_from_phrase("guess")));
  EXPECT_FALSE(push_by_hand(port, 2 << 20, token));
  // Half a header, then silence.
  fd = connect_loopback(port);
  send(fd, garbage.data(), 10, 0);
  EXPECT_TRUE(closed_by_peer(fd));
  ::close(fd);

  EXPECT_TRUE(push_by_hand(port, 100000, token));  // still serving
  // The server counts a push flow after its ack is sent, which may be after the client has read it.
  wait_for([&] {
    const auto now = server.counters();
    return now.header_timeouts == 1 && now.push_flows == 1;
  });
  const auto c = server.counters();
  EXPECT_EQ(c.bad_headers, 1u);
  EXPECT_EQ(c.unauthenticated, 1u);
  EXPECT_EQ(c.too_large, 1u);
  EXPECT_EQ(c.header_timeouts, 1u);
  EXPECT_EQ(c.push_flows, 1u);
}

// A stream wakes its server only per 256 KiB (its low-water mark). One that
// trickles less than that past the idle timeout is still traffic: the
// server counts its bytes and keeps it open, then counts it when it ends.
TEST(ServerBounds, ASlowStreamBelowItsLowWaterMarkIsNotIdle) {
  auto options = loopback_server();
  options.idle_timeout_ns = 300'000'000;
  Server server(options);
  server.start();
  const int fd = connect_loopback(port_of(server));
  ASSERT_GE(fd, 0);
  FlowHeader h;
  h.stream = true;
  const auto header = encode(h);
  ASSERT_EQ(send(fd, header.data(), header.size(), 0), static_cast<ssize_t>(header.size()));
  const std::vector<char> kilobyte(1000);
  for (int i = 0; i < 10; ++i) {  // 1 s: three idle timeouts
    ASSERT_EQ(send(fd, kilobyte.data(), kilobyte.size(), MSG_NOSIGNAL), 1000) << "closed after " << i << " KB";
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(server.counters().idle_timeouts, 0u);
  EXPECT_GE(server.counters().bytes_received, header.size() + 5000) << "the sweep reads what is below the mark";
  shutdown(fd, SHUT_WR);  // the FIN wakes it whatever is left
  EXPECT_TRUE(closed_by_peer(fd));
  ::close(fd);
  wait_for([&] { return server.counters().streams == 1; });
  EXPECT_EQ(server.counters().streams, 1u);
  EXPECT_EQ(server.counters().bytes_received, header.size() + 10'000);
}

TEST(ServerBounds, ConnectionFloodIsCappedAndServingContinues) {
  auto options = loopback_server();
  options.max_connections = 50;
  Server server(options);
  server.start();
  const std::uint16_t port = port_of(server);
  std::vector<int> flood;
  for (int i = 0; i < 300; ++i) {
    const int fd = connect_loopback(port);
    if (fd >= 0) flood.push_back(fd);
  }
  wait_for([&] { return server.counters().rejected_full >= 250; });
  auto c = server.counters();
  EXPECT_LE(c.open, 50u);
  EXPECT_GE(c.rejected_full, 250u);
  for (int fd : flood) ::close(fd);
  wait_for([&] { return server.counters().open == 0; });
  EXPECT_TRUE(push_by_hand(port, 4096));
}

TEST(ServerBounds, DescriptorsNeededCoverEveryConnectionAndListener) {
  ServerOptions o = loopback_server();
  o.max_connections = 1000;
  const std::uint64_t one = descriptors_needed(o);
  EXPECT_GT(one, 1000u + o.listen.size());
  o.threads = 4;
  EXPECT_GE(descriptors_needed(o), one + 3 * o.listen.size());
  o.max_connections = 2000;
  EXPECT_GE(descriptors_needed(o), one + 1000);
}

// A server out of descriptors closes each waiting connection at once
// (instead of leaving it queued and spinning on it), and serves again once
// descriptors come free. The server runs in a child process with a limit of
// a few descriptors above what it has open.
TEST(ServerBounds, AtTheOpenFileLimitConnectionsAreClosedAndServingContinues) {
  int to_child[2], to_parent[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(to_parent), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(to_child[1]);
    ::close(to_parent[0]);
    int status = 1;
    try {
      const auto used = static_cast<rlim_t>(
          std::distance(std::filesystem::directory_iterator("/proc/self/fd"), std::filesystem::directory_iterator()));
      const rlimit limit{used + 12, used + 12};
      if (setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(2);
      Server server(loopback_server());
      server.start();
      const std::uint16_t port = port_of(server);
      if (write(to_parent[1], &port, sizeof port) != sizeof port) _exit(3);
      char done = 0;
      if (read(to_child[0], &done, 1) < 0) _exit(4);  // the parent closes its end when it is done
      server.stop();
      const auto c = server.counters();
      const std::uint64_t counts[2] = {c.rejected_fd_limit, c.push_flows};
      status = write(to_parent[1], counts, sizeof counts) == sizeof counts ? 0 : 5;
    } catch (...) {
      status = 6;
    }
    _exit(status);
  }
  ::close(to_child[0]);
  ::close(to_parent[1]);
  std::uint16_t port = 0;
  ASSERT_EQ(read(to_parent[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));

  constexpr int kConnections = 40;
  std::vector<int> fds;
  for (int i = 0; i < kConnections; ++i) {
    const int fd = connect_loopback(port);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
  }
  // Within 2 s every connection is either held by the server or closed by it.
  std::vector<int> held;
  int closed = 0;
  std::vector<pollfd> waiting;
  for (int fd : fds) waiting.push_back({fd, POLLIN, 0});
  const auto until = std::chrono::steady_clock::now() + 2s;
  while (!waiting.empty() && std::chrono::steady_clock::now() < until) {
    if (poll(waiting.data(), waiting.size(), 100) <= 0) continue;
    for (auto it = waiting.begin(); it != waiting.end();) {
      if (it->revents == 0) {
        ++it;
        continue;
      }
      ++closed;
      ::close(it->fd);
      it = waiting.erase(it);
    }
  }
  for (const auto& p : waiting) held.push_back(p.fd);
  EXPECT_GT(held.size(), 0u);
  EXPECT_LT(held.size(), 12u);
  EXPECT_EQ(closed + static_cast<int>(held.size()), kConnections);
  for (int fd : held) ::close(fd);
  std::this_thread::sleep_for(200ms);  // the server sees the closes and frees their descriptors
  EXPECT_TRUE(push_by_hand(port, 4096));

  ::close(to_child[1]);
  std::uint64_t counts[2] = {0, 0};
  EXPECT_EQ(read(to_parent[0], counts, sizeof counts), static_cast<ssize_t>(sizeof counts));
  ::close(to_parent[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_EQ(counts[0], static_cast<std::uint64_t>(closed));
  EXPECT_EQ(counts[1], 1u);
}

}  // namespace xtk
