#include "capture/counters_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "core/error.hpp"

namespace xtk::capture {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{64} << 10;

// Empty on success, else the error text.
std::string write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::strerror(errno);
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

}  // namespace

CountersWriter::CountersWriter(const std::string& path, const std::vector<std::pair<std::string, std::string>>& header)
    : path_(path == "-" ? "stdout" : path) {
  if (path == "-") {
    fd_ = STDOUT_FILENO;
  } else {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
    owns_fd_ = true;
  }
  std::string head = fmt::format("# xtk-counters\n# format_version={}\n", kCountersFormatVersion);
  for (const auto& [key, value] : header) head += fmt::format("# {}={}\n", key, value);
  head += "t_ns,realtime_ns,source,name,value,slow\n";
  if (const auto error = write_all(fd_, head); !error.empty()) {
    if (owns_fd_) ::close(fd_);
    throw Error(fmt::format("{}: write failed: {}", path_, error));
  }
  chunk_.reserve(kChunkBytes + 4096);
  thread_ = std::thread([this] { write_loop(); });
}

CountersWriter::~CountersWriter() {
  try {
    close();
  } catch (const Error&) {
    // Destroyed while another error unwinds: that one is reported.
  }
}

std::size_t CountersWriter::add_counter(std::string_view source, std::string_view name) {
  prefixes_.push_back(fmt::format(",{},{},", source, name));
  return prefixes_.size() - 1;
}

void CountersWriter::begin_sample(std::int64_t t_ns, std::int64_t realtime_ns, bool slow) {
  stamp_.clear();
  fmt::format_to(std::back_inserter(stamp_), "{},{}", t_ns, realtime_ns);
  slow_suffix_ = slow ? ",1\n" : ",0\n";
}

void CountersWriter::row(std::size_t counter, std::uint64_t value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  chunk_.append(stamp_).append(prefixes_[counter]).append(digits, end).append(slow_suffix_);
  ++rows_;
}

void CountersWriter::end_sample() {
  if (chunk_.size() < kChunkBytes) return;
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(chunk_));
  if (spare_.empty()) {
    chunk_ = std::string();
    chunk_.reserve(kChunkBytes + 4096);
  } else {
    chunk_ = std::move(spare_.back());
    spare_.pop_back();
  }
  ready_.notify_one();
}

bool CountersWriter::failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !error_.empty();
}

void CountersWriter::write_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    ready_.wait(lock, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing with nothing left
    std::string data = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    std::string error = error_.empty() ? write_all(fd_, data) : std::string();
    data.clear();
    lock.lock();
    if (!error.empty() && error_.empty()) error_ = error;
    spare_.push_back(std::move(data));
  }
}

void CountersWriter::close() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!chunk_.empty()) queue_.push_back(std::move(chunk_));
    closing_ = true;
  }
  ready_.notify_one();
  thread_.join();
  if (owns_fd_ && ::close(fd_) != 0 && error_.empty()) error_ = std::strerror(errno);
  if (!error_.empty()) throw Error(fmt::format("{}: write failed: {}", path_, error_));
}

}  // namespace xtk::capture
