#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "transport/send_batch.hpp"
#include "transport/transport.hpp"

namespace xtk {

Poller::Poller(bool batch_sends) : epoll_(epoll_create1(EPOLL_CLOEXEC)) {
  if (!epoll_) throw Error(fmt::format("epoll_create1: {}", std::strerror(errno)));
  if (batch_sends) sends_ = SendBatch::open();
}

Poller::~Poller() = default;

void Poller::forget(EventSource& source) {
  alive_.erase(&source);
  std::erase_if(busy_polls_, [&](const auto& p) { return p.first == &source; });
  if (sends_) sends_->forget(source);
}

char* Poller::send_later(int fd, std::size_t bytes, EventSource& source) {
  return dispatching_ ? sends_->reserve(fd, bytes, source) : nullptr;
}

void Poller::flush_sends() {
  if (!dispatching_) return;
  dispatching_ = false;
  if (!sends_->empty()) sends_->flush(monotonic_ns());
}

void Poller::add(int fd, EventSource& source, std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = &source;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    throw Error(fmt::format("epoll_ctl: {}", std::strerror(errno)));
  }
  alive_.insert(&source);
}

void Poller::modify(int fd, EventSource& source, std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = &source;
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev);
}

void Poller::hand_over(int fd, EventSource& from, EventSource& to, std::uint32_t events) {
  forget(from);
  modify(fd, to, events);
  alive_.insert(&to);
}

Listener::Listener(const SocketAddress& address, bool shared_port, Poller& poller, std::function<void(int)> accept_all)
    : fd_(listen_tcp(address, shared_port)), bound_(address), accept_all_(std::move(accept_all)) {
  getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&bound_.storage), &bound_.length);
  poller.add(fd_.get(), *this, EPOLLIN);
}

int Poller::wait(const timespec* timeout) {
#ifdef SYS_epoll_pwait2  // headers older than the call (glibc 2.28's, RHEL 8's): always the legacy waits
  if (!legacy_) {
    // Straight to the kernel, as send_now (socket.hpp): glibc's epoll_pwait2 is a cancellation point.
    const auto n = syscall(SYS_epoll_pwait2, epoll_.get(), events_.data(), static_cast<int>(events_.size()), timeout,
                           nullptr, _NSIG / 8);
    if (n >= 0) return static_cast<int>(n);
    // Linux before 5.11 (RHEL 8's 4.18, Ubuntu 20.04's 5.4) answers ENOSYS, and a
    // container's seccomp profile that predates the call ENOSYS or EPERM: every
    // wait would return nothing, and no flow would ever end.
    if (errno != ENOSYS && errno != EPERM) return 0;  // EINTR: nothing this time
    legacy_ = true;
  }
#endif
  return wait_legacy(timeout);
}

int Poller::wait_legacy(const timespec* timeout) {
  int ms = -1;  // forever, or until the timer
  const bool zero = timeout != nullptr && timeout->tv_sec == 0 && timeout->tv_nsec == 0;
  if (zero) {
    ms = 0;
  } else if (timeout == nullptr || timeout->tv_nsec % 1'000'000 == 0) {
    if (timeout != nullptr) ms = static_cast<int>(timeout->tv_sec * 1000 + timeout->tv_nsec / 1'000'000);
    // A timer left from a wait that events ended early must not cut this one short.
    if (timer_armed_) {
      const itimerspec off{};
      timerfd_settime(timer_.get(), 0, &off, nullptr);
      timer_armed_ = false;
    }
  } else {
    if (!timer_) {
      timer_ = Fd(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = &timer_;
      if (!timer_ || epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, timer_.get(), &ev) != 0) {
        throw Error(fmt::format("timerfd for epoll_wait: {}", std::strerror(errno)));
      }
    }
    const itimerspec at{{}, *timeout};
    timerfd_settime(timer_.get(), 0, &at, nullptr);
    timer_armed_ = true;
  }
  int n = epoll_wait(epoll_.get(), events_.data(), static_cast<int>(events_.size()), ms);
  if (n < 0) return 0;  // EINTR
  // The timer's expiry is no event of a source: taken out, and read so it is not reported again.
  for (int i = 0; i < n; ++i) {
    if (events_[i].data.ptr != &timer_) continue;
    std::uint64_t expiries = 0;
    [[maybe_unused]] const ssize_t r = read(timer_.get(), &expiries, sizeof expiries);
    timer_armed_ = false;
    events_[i] = events_[--n];
    break;
  }
  return n;
}

}  // namespace xtk
