// A text file written through a large buffer ("-" = stdout) whose write
// errors (a full disk) surface as an Error instead of a silently short file.
#pragma once

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

namespace xtk {

// For rows formatted in place (TextOutput::reserve): the most characters a
// 64-bit integer takes in decimal, its sign included, and the integer written.
inline constexpr std::size_t kIntRoom = 20;
template <typename Integer>
char* put_int(char* at, Integer value) {
  return std::to_chars(at, at + kIntRoom, value).ptr;
}

class TextOutput {
 public:
  // Throws Error "PATH: cannot create WHAT: reason" when it cannot be created;
  // `what` ("flow records") may be empty.
  explicit TextOutput(const std::string& path, std::string_view what = {}, std::size_t buffer_bytes = kBufferBytes);
  ~TextOutput();
  TextOutput(const TextOutput&) = delete;
  TextOutput& operator=(const TextOutput&) = delete;

  void write(std::string_view text) {
    if (text.size() > capacity_ - used_) flush();
    if (text.size() > capacity_) {
      write_out(text.data(), text.size());
      return;
    }
    std::memcpy(buffer_.get() + used_, text.data(), text.size());
    used_ += text.size();
  }
  template <typename... Args>
  void print(fmt::format_string<Args...> format, Args&&... args) {
    fmt::memory_buffer text;
    fmt::format_to(std::back_inserter(text), format, std::forward<Args>(args)...);
    write(std::string_view(text.data(), text.size()));
  }
  // For rows formatted in place (the hot path of large files): room for up
  // to `bytes` (at most capacity()) at the returned pointer; commit() then
  // says where the row ended.
  char* reserve(std::size_t bytes) {
    if (bytes > capacity_ - used_) flush();
    return buffer_.get() + used_;
  }
  void commit(const char* end) { used_ = static_cast<std::size_t>(end - buffer_.get()); }

  void flush();
  void close();  // flushes and closes; throws Error on a write error
  const std::string& path() const { return path_; }
  std::size_t capacity() const { return capacity_; }

  static constexpr std::size_t kBufferBytes = 1 << 20;

 private:
  void write_out(const char* data, std::size_t size);

  std::string path_;
  int fd_ = -1;
  bool owns_ = false;
  std::size_t capacity_;
  std::unique_ptr<char[]> buffer_;
  std::size_t used_ = 0;
};

}  // namespace xtk
