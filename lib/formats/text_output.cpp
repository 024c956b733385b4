#include "formats/text_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace xtk {

TextOutput::TextOutput(const std::string& path, std::string_view what, std::size_t buffer_bytes)
    : path_(path == "-" ? "stdout" : path), capacity_(buffer_bytes) {
  if (path == "-") {
    fd_ = STDOUT_FILENO;
  } else {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      throw Error(fmt::format("{}: cannot create{}{}: {}", path, what.empty() ? "" : " ", what, std::strerror(errno)));
    }
    owns_ = true;
  }
  buffer_ = std::make_unique_for_overwrite<char[]>(capacity_);
}

TextOutput::~TextOutput() {
  try {
    close();
  } catch (const Error&) {
    // Destroyed while an error unwinds: the first error is the one reported.
  }
}

void TextOutput::flush() {
  const std::size_t used = used_;
  used_ = 0;  // emptied even when the write fails: the error is reported once
  write_out(buffer_.get(), used);
}

void TextOutput::write_out(const char* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd_, data + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
    done += static_cast<std::size_t>(n);
  }
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

}  // namespace xtk
