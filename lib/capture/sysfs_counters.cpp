// Counters that are one sysfs file each (net statistics, RDMA port counters):
// every file stays open and is read with pread at offset 0, ~1.7 us a file.
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "capture/counter_source.hpp"

namespace xtk::capture {
namespace {

// False when the file gave no number (the device went away: ENODEV, or empty).
bool read_value(int fd, std::uint64_t& value, int& error) {
  char text[32];
  const ssize_t n = pread(fd, text, sizeof text, 0);
  if (n <= 0) {
    error = n < 0 ? errno : ENODEV;
    return false;
  }
  const auto [end, ec] = std::from_chars(text, text + n, value);
  if (ec != std::errc() || end == text) {
    error = EINVAL;
    return false;
  }
  return true;
}

class SysfsCounters final : public CounterSource {
 public:
  SysfsCounters(std::string name, const std::vector<std::pair<std::string, std::string>>& files) {
    name_ = std::move(name);
    for (const auto& [counter, path] : files) {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      std::uint64_t value = 0;
      int error = 0;
      // A counter the driver lists but cannot read (unsupported on this port) is left out.
      if (!read_value(fd, value, error)) {
        ::close(fd);
        continue;
      }
      counters_.push_back(counter);
      fds_.push_back(fd);
    }
  }
  ~SysfsCounters() override {
    for (int fd : fds_) ::close(fd);
  }
  SysfsCounters(const SysfsCounters&) = delete;
  SysfsCounters& operator=(const SysfsCounters&) = delete;

  bool read(std::uint64_t* values) override {
    for (std::size_t i = 0; i < fds_.size(); ++i) {
      int error = 0;
      if (!read_value(fds_[i], values[i], error)) {
        why_ = fmt::format("reading {} failed: {} (the device went away?)", counters_[i], std::strerror(error));
        return false;
      }
    }
    return true;
  }

 private:
  std::vector<int> fds_;
};

}  // namespace

std::unique_ptr<CounterSource> open_sysfs_counters(std::string name,
                                                   const std::vector<std::pair<std::string, std::string>>& files) {
  return std::make_unique<SysfsCounters>(std::move(name), files);
}

}  // namespace xtk::capture
