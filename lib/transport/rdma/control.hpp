// The TCP control connection of an RDMA channel: fixed-size messages (queue-
// pair details, flow headers, acknowledgements) on a non-blocking socket.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <string>

#include "transport/socket.hpp"

namespace xtk::rdma {

class ControlLink {
 public:
  ControlLink() = default;
  explicit ControlLink(Fd fd) : fd_(std::move(fd)) {}
  int fd() const { return fd_.get(); }

  // Queues `size` bytes and sends what the socket takes now; the rest goes
  // with flush() when it is writable. False on an error (errno set).
  bool send(const void* data, std::size_t size) {
    out_.append(static_cast<const char*>(data), size);
    return flush();
  }
  bool flush() {
    while (!out_.empty()) {
      const ssize_t n = ::send(fd_.get(), out_.data(), out_.size(), MSG_NOSIGNAL);
      if (n < 0) return errno == EAGAIN || errno == EINTR;
      out_.erase(0, static_cast<std::size_t>(n));
    }
    return true;
  }
  bool pending_output() const { return !out_.empty(); }

  enum class Read { complete, partial, closed, failed };
  // Reads towards a message of `size` bytes at `into`, `got` of it so far.
  Read receive(void* into, std::size_t size, std::size_t& got) {
    while (got < size) {
      const ssize_t n = ::recv(fd_.get(), static_cast<char*>(into) + got, size - got, 0);
      if (n == 0) return Read::closed;
      if (n < 0) return errno == EAGAIN || errno == EINTR ? Read::partial : Read::failed;
      got += static_cast<std::size_t>(n);
    }
    return Read::complete;
  }

  void shutdown_write() { ::shutdown(fd_.get(), SHUT_WR); }

 private:
  Fd fd_;
  std::string out_;
};

}  // namespace xtk::rdma
