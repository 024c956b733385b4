#include "collective/control_wire.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <cerrno>

#include "core/error.hpp"

namespace xtk::collective {
namespace {

void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xFFU);
}
void put_u64(std::string& out, std::uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xFFU);
}
std::uint64_t get_be(const std::string& in, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[at + static_cast<std::size_t>(i)]);
  return v;
}

constexpr std::size_t kFixedBytes = 1 + 8 + 8 + 4 + 4;  // type, id, number, two lengths

}  // namespace

std::string encode_message(const Message& m) {
  std::string out;
  const std::size_t length = kFixedBytes + m.key.size() + m.value.size();
  if (length > kMaxMessageBytes) throw Error(fmt::format("control message of {} bytes is too large", length));
  out.reserve(4 + length);
  put_u32(out, static_cast<std::uint32_t>(length));
  out += static_cast<char>(m.type);
  put_u64(out, m.id);
  put_u64(out, m.number);
  put_u32(out, static_cast<std::uint32_t>(m.key.size()));
  out += m.key;
  put_u32(out, static_cast<std::uint32_t>(m.value.size()));
  out += m.value;
  return out;
}

void MessageDecoder::feed(const char* data, std::size_t size) {
  if (offset_ > 0 && offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  }
  buffer_.append(data, size);
}

std::optional<Message> MessageDecoder::next() {
  const std::size_t available = buffer_.size() - offset_;
  if (available < 4) return std::nullopt;
  const std::size_t length = get_be(buffer_, offset_, 4);
  if (length < kFixedBytes || length > kMaxMessageBytes) {
    throw Error(fmt::format("malformed control message: length {}", length));
  }
  if (available < 4 + length) return std::nullopt;
  std::size_t at = offset_ + 4;
  Message m;
  const auto type = static_cast<unsigned char>(buffer_[at]);
  if (type < static_cast<unsigned char>(MessageType::hello) || type > static_cast<unsigned char>(MessageType::clock)) {
    throw Error(fmt::format("malformed control message: type {}", type));
  }
  m.type = static_cast<MessageType>(type);
  m.id = get_be(buffer_, at + 1, 8);
  m.number = get_be(buffer_, at + 9, 8);
  const std::size_t key_length = get_be(buffer_, at + 17, 4);
  at += 21;
  if (key_length + kFixedBytes > length) throw Error("malformed control message: key longer than the frame");
  m.key = buffer_.substr(at, key_length);
  at += key_length;
  const std::size_t value_length = get_be(buffer_, at, 4);
  if (kFixedBytes + key_length + value_length != length) {
    throw Error("malformed control message: lengths do not add up");
  }
  m.value = buffer_.substr(at + 4, value_length);
  offset_ += 4 + length;
  return m;
}

bool send_all(int fd, const std::string& bytes, int timeout_ms) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return false;
      continue;
    }
    return false;
  }
  return true;
}

void set_keep_alive(int fd) {
  const int on = 1, idle = 5, interval = 2, count = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

}  // namespace xtk::collective
