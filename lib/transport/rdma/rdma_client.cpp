// An RDMA channel, client side: the control connection comes up, queue-pair
// details go both ways and the queue pair moves to RTS; then each flow's
// header goes over the control connection and its bytes as messages (push),
// or the server's messages are counted in (pull). A push ends with the
// server's acknowledgement, a stream when its last message completed and the
// control connection's write side is shut.
#include <fmt/format.h>

#include <cstring>
#include <deque>

#include "core/error.hpp"
#include "transport/rdma/control.hpp"
#include "transport/rdma/messages.hpp"
#include "transport/rdma/rdma.hpp"
#include "transport/rdma/worker_resources.hpp"

namespace xtk::rdma {
namespace {

class RdmaChannel final : public Channel, public EventSource, public CompletionHandler {
 public:
  RdmaChannel(WorkerResources& worker, Fd control, ChannelOwner& owner, Poller& poller, Verb verb)
      : worker_(worker),
        control_(std::move(control)),
        owner_(owner),
        poller_(poller),
        verb_(verb),
        qp_(create_queue_pair(worker.device, worker.completions, worker.settings)),
        id_(worker.completions.add(*this)) {
    local_ = worker_.describe(qp_, verb_);
    poller_.add(control_.fd(), *this, EPOLLOUT);  // writable: the control connection is up (or failed)
  }
  ~RdmaChannel() override {
    poller_.forget(*this);
    worker_.completions.remove(id_);
    ibv_destroy_qp(qp_);
  }
  RdmaChannel(const RdmaChannel&) = delete;
  RdmaChannel& operator=(const RdmaChannel&) = delete;

  void start(const FlowStart& flow, std::int64_t now) override {
    if (flow.rate_bps != rate_bps_) {
      // A per-QP rate limit where the device has one; elsewhere the flow runs unpaced (docs/rdma.md).
      ibv_qp_rate_limit_attr limit{};
      limit.rate_limit = static_cast<std::uint32_t>(flow.rate_bps / 1000);
      const int error = ibv_modify_qp_rate_limit(qp_, &limit);
      if (error == 0) {
        rate_bps_ = flow.rate_bps;
      } else {
        owner_.option_failed("ibv_modify_qp_rate_limit", error);
      }
    }
    flow_ = flow;
    state_ = State::busy;
    ack_got_ = 0;
    acknowledged_ = false;
    posted_.clear();
    receive_left_ = flow.direction == Direction::pull ? flow.size_bytes : 0;
    const bool pushing = flow.direction == Direction::push;
    plan_ = MessagePlan(pushing ? flow.size_bytes : 0, message_bytes_to(worker_.settings, peer_),
                        window_to(worker_.settings, peer_), flow.stream);
    FlowHeader h;
    h.direction = flow.direction;
    h.stream = flow.stream;
    h.flow_id = flow.id;
    h.size_bytes = flow.size_bytes;
    h.token = flow.token;
    const auto header = encode(h);
    if (!control_.send(header.data(), header.size())) {
      end(false, fmt::format("control connection: {}", std::strerror(errno)), now);
      return;
    }
    watch_control();
    if (pushing) {
      post(now);
    } else if (flow.size_bytes == 0) {
      end(true, "", now);  // an empty pull: nothing will come
    }
  }

  void stop_stream(std::int64_t now) override {
    if (state_ != State::busy || !flow_.stream) return;
    plan_.stop();
    if (plan_.done()) finish_stream(now);
  }

  void on_events(std::uint32_t events, std::int64_t now) override {
    if (state_ == State::connecting) {
      const bool failed = (events & (EPOLLERR | EPOLLHUP)) != 0;
      if (failed) {
        const int error = socket_error(control_.fd());
        owner_.connect_failed(std::strerror(error != 0 ? error : ECONNREFUSED), now);
        return;
      }
      const auto details = encode(local_);
      if (!control_.send(details.data(), details.size())) {
        owner_.connect_failed(std::strerror(errno), now);
        return;
      }
      state_ = State::exchanging;
      watch_control();
      return;
    }
    if ((events & EPOLLOUT) && !control_.flush()) {
      fail(fmt::format("control connection: {}", std::strerror(errno)), now);
      return;
    }
    if (state_ == State::exchanging) {
      exchange(now);
      return;
    }
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && !read_control(now)) return;
    watch_control();
  }

  void on_completion(const ibv_wc& wc, std::int64_t now) override {
    if (wc.status != IBV_WC_SUCCESS) {
      fail(fmt::format("RDMA {} failed: {}", is_receive(wc) ? "receive" : "message", ibv_wc_status_str(wc.status)),
           now);
      return;
    }
    if (is_receive(wc)) {
      if (worker_.post_receive(qp_, id_) != 0) {
        fail(fmt::format("posting a receive: {}", std::strerror(errno)), now);
        return;
      }
      const std::uint32_t bytes = received_bytes(wc);
      if (state_ != State::busy || receive_left_ == 0) return;  // stray: nothing is being pulled
      receive_left_ -= std::min<std::uint64_t>(bytes, receive_left_);
      if (receive_left_ == 0) end(true, "", now);
      return;
    }
    if (posted_.empty() || state_ != State::busy) return;
    plan_.completed(posted_.front());
    posted_.pop_front();
    if (flow_.stream && now >= flow_.stop_abs_ns) plan_.stop();
    post(now);
  }

 private:
  enum class State { connecting, exchanging, idle, busy, closed };

  void watch_control() {
    const std::uint32_t events = EPOLLIN | EPOLLRDHUP | (control_.pending_output() ? EPOLLOUT : 0U);
    if (events != events_) {
      poller_.modify(control_.fd(), *this, events);
      events_ = events;
    }
  }

  void exchange(std::int64_t now) {
    const auto read = control_.receive(peer_bytes_.data(), peer_bytes_.size(), peer_got_);
    if (read == ControlLink::Read::partial) return;
    if (read != ControlLink::Read::complete) {
      owner_.connect_failed(
          read == ControlLink::Read::closed
              ? "the server closed the control connection (is it an xtk-server with --transport rdma?)"
              : std::strerror(errno),
          now);
      return;
    }
    std::string reason;
    const auto peer = decode_qp_info(peer_bytes_, &reason);
    try {
      if (!peer) throw Error(reason);
      peer_ = *peer;
      connect_queue_pair(qp_, worker_.settings, local_, peer_);
      for (std::uint32_t i = 0; i < worker_.settings.outstanding; ++i) {
        if (worker_.post_receive(qp_, id_) != 0)
          throw Error(fmt::format("posting a receive: {}", std::strerror(errno)));
      }
    } catch (const Error& e) {
      owner_.connect_failed(e.what(), now);
      return;
    }
    state_ = State::idle;
    watch_control();
    owner_.connected(now);
  }

  // Posts messages while the plan allows; ends a stream or waits for the ack when all are done.
  void post(std::int64_t now) {
    while (const std::uint32_t bytes = plan_.next()) {
      if (worker_.post_message(qp_, id_, verb_, peer_, bytes) != 0) {
        fail(fmt::format("posting a message: {}", std::strerror(errno)), now);
        return;
      }
      posted_.push_back(bytes);
    }
    if (!plan_.done()) return;
    if (flow_.stream) {
      finish_stream(now);
    } else if (acknowledged_) {
      end(true, "", now);  // the server's acknowledgement came before the last completion
    }
  }

  void finish_stream(std::int64_t now) {
    control_.shutdown_write();
    end(true, "", now);
  }

  // Reads the control connection; false when the owner was told something
  // (the channel may be gone).
  bool read_control(std::int64_t now) {
    if (state_ == State::busy && flow_.direction == Direction::push && !flow_.stream && !acknowledged_) {
      const auto read = control_.receive(ack_.data(), ack_.size(), ack_got_);
      if (read == ControlLink::Read::partial) return true;
      if (read != ControlLink::Read::complete) {
        fail(read == ControlLink::Read::closed ? "the server closed the connection mid-flow"
                                               : fmt::format("control connection: {}", std::strerror(errno)),
             now);
        return false;
      }
      if (decode_ack(ack_) != flow_.id) {
        end(false, "acknowledgement for another flow", now);
        return false;
      }
      if (plan_.done()) {
        end(true, "", now);
        return false;
      }
      acknowledged_ = true;  // the push ends with its last send completion (post)
      return true;
    }
    char probe = 0;  // nothing is due on the control connection now: only a close or an error
    const ssize_t n = ::recv(control_.fd(), &probe, 1, MSG_PEEK);
    if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR))) return true;
    fail(n == 0 ? "the server closed the connection mid-flow"
                : fmt::format("control connection: {}", std::strerror(errno)),
         now);
    return false;
  }

  // The queue pair or the control connection broke: the flow fails (idle,
  // the channel closes; still connecting, the connection fails).
  void fail(std::string error, std::int64_t now) {
    if (state_ == State::busy) {
      end(false, std::move(error), now);
    } else if (state_ == State::idle) {
      state_ = State::closed;
      owner_.closed(now);
    } else if (state_ != State::closed) {
      state_ = State::closed;
      owner_.connect_failed(std::move(error), now);
    }
  }

  void end(bool ok, std::string error, std::int64_t now) {
    state_ = ok ? State::idle : State::closed;  // a failed queue pair is in its error state: not reused
    const std::uint64_t bytes = plan_.completed_bytes();
    owner_.flow_ended({ok, std::move(error), bytes}, now);
  }

  WorkerResources& worker_;
  ControlLink control_;
  ChannelOwner& owner_;
  Poller& poller_;
  Verb verb_;
  ibv_qp* qp_;
  std::uint64_t id_;
  State state_ = State::connecting;
  std::uint32_t events_ = EPOLLOUT;
  QpInfo local_, peer_;
  QpInfoBytes peer_bytes_{};
  std::size_t peer_got_ = 0;
  FlowStart flow_;
  MessagePlan plan_;
  std::deque<std::uint32_t> posted_;  // sizes of the messages in flight, in order (RC completes in order)
  std::uint64_t receive_left_ = 0, rate_bps_ = 0;
  AckBytes ack_{};
  std::size_t ack_got_ = 0;
  bool acknowledged_ = false;
};

class RdmaClient final : public ClientTransport {
 public:
  RdmaClient(const ChannelOptions& options, Poller& poller)
      : verb_(parse_verb(options.device.verb)), worker_(options.device, poller), poller_(poller) {}

  std::unique_ptr<Channel> connect(const SocketAddress& server, ChannelOwner& owner, std::string* error) override {
    Fd fd = connect_tcp_nonblocking(server, error);
    if (!fd) return nullptr;
    set_nodelay(fd.get(), true);
    try {
      return std::make_unique<RdmaChannel>(worker_, std::move(fd), owner, poller_, verb_);
    } catch (const Error& e) {  // no queue pair to be had (device limits)
      *error = e.what();
      return nullptr;
    }
  }

 private:
  Verb verb_;
  WorkerResources worker_;
  Poller& poller_;
};

}  // namespace

std::unique_ptr<ClientTransport> make_client(const ChannelOptions& options, Poller& poller) {
  return std::make_unique<RdmaClient>(options, poller);
}

}  // namespace xtk::rdma
