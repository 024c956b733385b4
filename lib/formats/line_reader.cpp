#include "formats/line_reader.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <istream>

#include "core/error.hpp"

namespace xtk {
namespace {
constexpr std::size_t kBlockBytes = 64 << 10;
}  // namespace

LineReader::LineReader(std::string_view text) : unread_(text), ended_(true) {}

LineReader::LineReader(int fd, std::string source) : fd_(fd), source_(std::move(source)), block_(kBlockBytes) {}

LineReader::LineReader(std::istream& in, std::string source)
    : in_(&in), source_(std::move(source)), block_(kBlockBytes) {}

bool LineReader::next(std::string_view& line) {
  while (true) {
    const void* newline = unread_.empty() ? nullptr : std::memchr(unread_.data(), '\n', unread_.size());
    if (newline != nullptr) {
      const auto length = static_cast<std::size_t>(static_cast<const char*>(newline) - unread_.data());
      line = unread_.substr(0, length);
      unread_.remove_prefix(length + 1);
      break;
    }
    if (ended_) {
      if (unread_.empty()) return false;
      line = unread_;
      unread_.remove_prefix(unread_.size());
      break;
    }
    refill();
  }
  ++line_;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return true;
}

void LineReader::refill() {
  const std::size_t held = unread_.size();
  if (held > 0) std::memmove(block_.data(), unread_.data(), held);
  if (held == block_.size()) block_.resize(2 * held);  // a line longer than the block
  const std::size_t got = read_some(block_.data() + held, block_.size() - held);
  ended_ = got == 0;
  unread_ = std::string_view(block_.data(), held + got);
}

std::size_t LineReader::read_some(char* to, std::size_t room) {
  if (in_ != nullptr) {
    in_->read(to, static_cast<std::streamsize>(room));
    if (in_->bad()) throw InputError(source_, line_, "read error");
    return static_cast<std::size_t>(in_->gcount());
  }
  while (true) {
    const ssize_t n = ::read(fd_, to, room);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno != EINTR) throw InputError(source_, line_, fmt::format("read error: {}", std::strerror(errno)));
  }
}

}  // namespace xtk
