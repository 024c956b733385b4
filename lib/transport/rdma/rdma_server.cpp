// RDMA channels, server side: accept the control connection, take the
// client's queue-pair details and answer with this end's, then serve flows:
// each header comes over the control connection; a push is counted in from
// the messages' immediates and acknowledged, a pull goes out as messages, a
// stream is counted until the client shuts its control connection.
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "transport/rdma/control.hpp"
#include "transport/rdma/messages.hpp"
#include "transport/rdma/rdma.hpp"
#include "transport/rdma/worker_resources.hpp"

namespace xtk::rdma {
namespace {

class RdmaServer;

class ServerChannel final : public EventSource, public CompletionHandler {
 public:
  ServerChannel(RdmaServer& server, Fd fd);
  ~ServerChannel();
  ServerChannel(const ServerChannel&) = delete;
  ServerChannel& operator=(const ServerChannel&) = delete;
  void on_events(std::uint32_t events, std::int64_t now) override;
  void on_completion(const ibv_wc& wc, std::int64_t now) override;
  bool expired(std::int64_t now) const;

 private:
  enum class State { exchanging, header, push_body, push_stream, pull_body };
  bool exchange();
  bool read_header();
  bool begin_flow();
  bool acknowledge();
  bool post_pull();
  void watch();

  RdmaServer& server_;
  ControlLink control_;
  std::uint64_t id_;
  ibv_qp* qp_ = nullptr;
  State state_ = State::exchanging;
  std::uint32_t events_ = EPOLLIN | EPOLLRDHUP;
  QpInfo local_, peer_;
  QpInfoBytes peer_bytes_{};
  std::size_t peer_got_ = 0;
  HeaderBytes header_{};
  std::size_t header_got_ = 0;
  FlowHeader flow_;
  std::uint64_t left_ = 0;
  std::uint64_t early_ = 0;  // a push's bytes that came before its header (they take different paths)
  MessagePlan plan_;
  std::deque<std::uint32_t> posted_;
  std::int64_t last_activity_ns_ = 0;
};

class RdmaServer final : public ServerTransport {
 public:
  RdmaServer(const ServerContext& context, Poller& poller)
      : context_(context), poller_(poller), worker_(context.settings.device, poller) {}

  SocketAddress listen(const SocketAddress& address, bool shared_port) override {
    listeners_.push_back(std::make_unique<Listener>(address, shared_port, poller_, [this](int fd) { accept_all(fd); }));
    return listeners_.back()->bound();
  }

  void sweep(std::int64_t now) override {
    close_expired(channels_, now, [this](ServerChannel& c) { close(c); });
  }

  void accept_all(int listener) {
    while (true) {
      const int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      if (context_.open.load(std::memory_order_relaxed) >= context_.settings.max_connections) {
        ::close(fd);
        bump(context_.stats.rejected_full);
        continue;
      }
      set_nodelay(fd, true);
      try {
        auto c = std::make_unique<ServerChannel>(*this, Fd(fd));
        ServerChannel& ref = *c;
        channels_.emplace(&ref, std::move(c));
      } catch (const Error&) {
        bump(context_.stats.rejected_full);  // no queue pair to be had: the client sees the close
        continue;
      }
      context_.open.fetch_add(1, std::memory_order_relaxed);
      bump(context_.stats.accepted);
    }
  }

  void close(ServerChannel& c) {
    if (channels_.erase(&c) > 0) context_.open.fetch_sub(1, std::memory_order_relaxed);
  }

  const ServerContext& context() const { return context_; }
  Poller& poller() { return poller_; }
  WorkerResources& worker() { return worker_; }

 private:
  ServerContext context_;
  Poller& poller_;
  WorkerResources worker_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::unordered_map<ServerChannel*, std::unique_ptr<ServerChannel>> channels_;
};

ServerChannel::ServerChannel(RdmaServer& server, Fd fd)
    : server_(server),
      control_(std::move(fd)),
      id_(server.worker().completions.add(*this)),
      last_activity_ns_(monotonic_ns()) {
  try {
    qp_ = create_queue_pair(server.worker().device, server.worker().completions, server.worker().settings);
  } catch (...) {
    server_.worker().completions.remove(id_);
    throw;
  }
  server_.poller().add(control_.fd(), *this, events_);
}

ServerChannel::~ServerChannel() {
  server_.poller().forget(*this);
  server_.worker().completions.remove(id_);
  if (qp_ != nullptr) ibv_destroy_qp(qp_);
}

bool ServerChannel::expired(std::int64_t now) const {
  const auto& settings = server_.context().settings;
  auto& stats = server_.context().stats;
  const std::int64_t quiet = now - last_activity_ns_;
  if ((state_ == State::exchanging || (state_ == State::header && header_got_ > 0)) &&
      quiet > settings.header_timeout_ns) {
    bump(stats.header_timeouts);
    return true;
  }
  if (quiet > settings.idle_timeout_ns) {
    bump(stats.idle_timeouts);
    return true;
  }
  return false;
}

// During a pull, the client's next header may come before the pull's last
// send completions here: it waits in the socket (no EPOLLIN) until they do.
void ServerChannel::watch() {
  const std::uint32_t events =
      (state_ == State::pull_body ? 0U : EPOLLIN) | EPOLLRDHUP | (control_.pending_output() ? EPOLLOUT : 0U);
  if (events == events_) return;
  server_.poller().modify(control_.fd(), *this, events);
  events_ = events;
}

void ServerChannel::on_events(std::uint32_t events, std::int64_t now) {
  last_activity_ns_ = now;
  bool keep = !(events & EPOLLOUT) || control_.flush();
  if (keep && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
    keep = state_ == State::exchanging ? exchange() : read_header();
  }
  if (!keep) {
    server_.close(*this);
    return;
  }
  watch();
}

// The client's queue-pair details; answers with this end's. False closes.
bool ServerChannel::exchange() {
  auto& stats = server_.context().stats;
  const auto read = control_.receive(peer_bytes_.data(), peer_bytes_.size(), peer_got_);
  if (read == ControlLink::Read::partial) return true;
  if (read != ControlLink::Read::complete) return false;
  std::string reason;
  const auto peer = decode_qp_info(peer_bytes_, &reason);
  if (!peer) {
    bump(stats.bad_headers);  // not an xtk RDMA client
    return false;
  }
  peer_ = *peer;
  auto& worker = server_.worker();
  local_ = worker.describe(qp_, peer_.verb);
  try {
    connect_queue_pair(qp_, worker.settings, local_, peer_);
  } catch (const Error&) {
    bump(stats.aborted_flows);
    return false;
  }
  for (std::uint32_t i = 0; i < worker.settings.outstanding; ++i) {
    if (worker.post_receive(qp_, id_) != 0) return false;
  }
  const auto details = encode(local_);
  if (!control_.send(details.data(), details.size())) return false;
  state_ = State::header;
  return true;
}

// Reads flow headers (and, in a flow, watches for the end of the connection).
bool ServerChannel::read_header() {
  auto& stats = server_.context().stats;
  if (state_ != State::header) {
    char probe = 0;  // in a flow the client sends nothing more: only a close (a stream's end) or an error
    const ssize_t n = ::recv(control_.fd(), &probe, 1, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (n == 0 && state_ == State::push_stream) {
      bump(stats.streams);
    } else {
      bump(n > 0 ? stats.bad_headers : stats.aborted_flows);
    }
    return false;
  }
  const auto read = control_.receive(header_.data(), header_.size(), header_got_);
  if (read == ControlLink::Read::partial) return true;
  if (read != ControlLink::Read::complete) {
    if (header_got_ > 0) bump(stats.aborted_flows);
    return false;
  }
  header_got_ = 0;
  return begin_flow();
}

bool ServerChannel::begin_flow() {
  const auto header = admit_flow(header_, server_.context());
  if (!header) return false;
  flow_ = *header;
  if (flow_.stream) {
    state_ = State::push_stream;
    early_ = 0;
    return true;
  }
  if (flow_.direction == Direction::push) {
    left_ = flow_.size_bytes - std::min(early_, flow_.size_bytes);
    early_ = 0;
    state_ = State::push_body;
    return left_ > 0 || acknowledge();
  }
  auto& worker = server_.worker();
  plan_ =
      MessagePlan(flow_.size_bytes, message_bytes_to(worker.settings, peer_), window_to(worker.settings, peer_), false);
  posted_.clear();
  state_ = State::pull_body;
  return post_pull();
}

bool ServerChannel::acknowledge() {
  const auto ack = encode_ack(flow_.flow_id);
  if (!control_.send(ack.data(), ack.size())) return false;
  bump(server_.context().stats.push_flows);
  state_ = State::header;
  return true;
}

bool ServerChannel::post_pull() {
  auto& worker = server_.worker();
  while (const std::uint32_t bytes = plan_.next()) {
    if (worker.post_message(qp_, id_, peer_.verb, peer_, bytes) != 0) return false;
    posted_.push_back(bytes);
  }
  if (plan_.done()) {
    bump(server_.context().stats.pull_flows);
    state_ = State::header;
  }
  return true;
}

void ServerChannel::on_completion(const ibv_wc& wc, std::int64_t now) {
  auto& stats = server_.context().stats;
  last_activity_ns_ = now;
  bool keep = wc.status == IBV_WC_SUCCESS;
  if (!keep) bump(stats.aborted_flows);
  if (keep && is_receive(wc)) {
    const std::uint32_t bytes = received_bytes(wc);
    bump(stats.bytes_received, bytes);
    keep = server_.worker().post_receive(qp_, id_) == 0;
    if (keep && state_ == State::push_body) {
      left_ -= std::min<std::uint64_t>(bytes, left_);
      if (left_ == 0) keep = acknowledge();
    } else if (keep && (state_ == State::header || state_ == State::pull_body)) {
      early_ += bytes;  // the next push's, ahead of its header
    }
  } else if (keep && !posted_.empty()) {
    bump(stats.bytes_sent, posted_.front());
    plan_.completed(posted_.front());
    posted_.pop_front();
    keep = post_pull();
  }
  if (!keep) {
    server_.close(*this);
    return;
  }
  watch();
}

}  // namespace

std::unique_ptr<ServerTransport> make_server(const ServerContext& context, Poller& poller) {
  return std::make_unique<RdmaServer>(context, poller);
}

}  // namespace xtk::rdma
