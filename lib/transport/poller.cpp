#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "core/error.hpp"
#include "transport/transport.hpp"

namespace xtk {

Poller::Poller() : epoll_(epoll_create1(EPOLL_CLOEXEC)) {
  if (!epoll_) throw Error(fmt::format("epoll_create1: {}", std::strerror(errno)));
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
  // Straight to the kernel, as send_now (socket.hpp): glibc's epoll_pwait2 is a cancellation point.
  const auto n = syscall(SYS_epoll_pwait2, epoll_.get(), events_.data(), static_cast<int>(events_.size()), timeout,
                         nullptr, _NSIG / 8);
  return n < 0 ? 0 : static_cast<int>(n);  // EINTR: nothing this time
}

}  // namespace xtk
