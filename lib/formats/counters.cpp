#include "formats/counters.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "formats/text_output.hpp"

namespace xtk {
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
  char digits[kIntRoom];
  char* end = put_int(digits, value);
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

CountersReader::CountersReader(std::string_view content, std::string source)
    : csv_(content, std::move(source), "xtk-counters", kCounterColumns) {}

CountersReader::CountersReader(const std::string& path) : csv_(RunCsv::file, path, "xtk-counters", kCounterColumns) {}

bool CountersReader::next(CounterSample& s) {
  if (!csv_.next()) return false;
  s.t_ns = csv_.time_field(0, "t_ns");
  s.realtime_ns = csv_.time_field(1, "realtime_ns");
  s.source = csv_.token_field(2, "source");
  s.name = csv_.token_field(3, "name");
  s.value = csv_.unsigned_field(4, "value");
  const auto slow = csv_.field(5);
  if (slow != "0" && slow != "1") csv_.fail(fmt::format("slow '{}' is not 0 or 1", slow));
  s.slow = slow == "1";
  const auto same = [&](const Last& l) { return l.source == s.source && l.name == s.name; };
  std::size_t i = guess_ < last_.size() && same(last_[guess_]) ? guess_ : 0;
  while (i < last_.size() && !same(last_[i])) ++i;
  if (i == last_.size()) {
    last_.push_back({std::string(s.source), std::string(s.name), s.t_ns});
  } else {
    if (s.t_ns <= last_[i].t_ns) {
      csv_.fail(fmt::format("t_ns {} of {}/{} is not after the previous sample's {}", s.t_ns, s.source, s.name,
                            last_[i].t_ns));
    }
    last_[i].t_ns = s.t_ns;
  }
  guess_ = (i + 1) % last_.size();
  return true;
}

void read_counters(std::string_view content, const std::string& source,
                   const std::function<void(const CounterSample&)>& row) {
  CountersReader reader(content, source);
  for (CounterSample s; reader.next(s);) row(s);
}

int counter_bytes_per_unit(std::string_view name) {
  if (name == "port_xmit_data" || name == "port_rcv_data") return 4;
  const bool bytes = name.find("bytes") != std::string_view::npos || name.find("octets") != std::string_view::npos ||
                     name.find("Octets") != std::string_view::npos;
  return bytes ? 1 : 0;
}

std::optional<std::uint64_t> counter_increase(std::uint64_t previous, std::uint64_t value) {
  constexpr std::uint64_t k2p32 = 1ULL << 32;
  if (value >= previous) return value - previous;
  if (previous < k2p32 && k2p32 - previous + value < (1ULL << 31)) return k2p32 - previous + value;
  if (previous >= (1ULL << 63) && value < (1ULL << 62)) return (UINT64_MAX - previous) + value + 1;
  return std::nullopt;
}

}  // namespace xtk
