// A text file written through a large buffer ("-" = stdout) whose write
// errors (a full disk) surface as an Error instead of a silently short file.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <string_view>

namespace xtk::capture {

class TextOutput {
 public:
  explicit TextOutput(const std::string& path);  // throws Error when it cannot be created
  ~TextOutput();
  TextOutput(const TextOutput&) = delete;
  TextOutput& operator=(const TextOutput&) = delete;

  void write(std::string_view text) {
    buffer_.append(text);
    if (buffer_.size() >= kFlushBytes) flush();
  }
  template <typename... Args>
  void print(fmt::format_string<Args...> format, Args&&... args) {
    fmt::format_to(std::back_inserter(buffer_), format, std::forward<Args>(args)...);
    if (buffer_.size() >= kFlushBytes) flush();
  }
  void flush();
  void close();  // flushes and closes; throws Error on a write error
  const std::string& path() const { return path_; }

 private:
  static constexpr std::size_t kFlushBytes = 1 << 20;
  std::string path_;
  int fd_ = -1;
  bool owns_ = false;
  std::string buffer_;
};

}  // namespace xtk::capture
