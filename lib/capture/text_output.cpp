#include "capture/text_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace xtk::capture {

TextOutput::TextOutput(const std::string& path) : path_(path == "-" ? "stdout" : path) {
  if (path == "-") {
    fd_ = STDOUT_FILENO;
  } else {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
    owns_ = true;
  }
  buffer_.reserve(kFlushBytes + 4096);
}

TextOutput::~TextOutput() {
  try {
    close();
  } catch (const Error&) {
    // Destroyed while an error unwinds: the first error is the one reported.
  }
}

void TextOutput::flush() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      buffer_.clear();
      throw Error(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
    }
    done += static_cast<std::size_t>(n);
  }
  buffer_.clear();
}

void TextOutput::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  try {
    flush();
  } catch (const Error&) {
    if (owns_) ::close(fd);
    fd_ = -1;
    throw;
  }
  fd_ = -1;
  if (owns_ && ::close(fd) != 0) throw Error(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
}

}  // namespace xtk::capture
