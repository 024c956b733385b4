#include "transport/tcp/process_counts.hpp"

#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <charconv>
#include <cstddef>
#include <cstring>
#include <string_view>
#include <utility>

namespace xtk {
namespace {

// struct tcp_info of Linux 6.7 and later: tcpi_rcv_wnd and tcpi_rehash follow
// tcpi_snd_wnd, then the u16 tcpi_total_rto. Debian 12's headers end at
// tcpi_snd_wnd, so its offset anchors the later fields.
constexpr std::size_t kTotalRtoOffset = offsetof(tcp_info, tcpi_snd_wnd) + 12;
static_assert(offsetof(tcp_info, tcpi_snd_wnd) == 228, "struct tcp_info's layout is the kernel's ABI");
constexpr std::size_t kInfoBytes = kTotalRtoOffset + 8;  // through tcpi_total_rto_time

struct Reading {
  std::uint32_t retransmits = 0;
  std::uint64_t rwnd_limited_us = 0;
  std::optional<std::uint16_t> timeouts;
};

// False for a socket that is not TCP.
bool read_socket(int fd, Reading& out) {
  unsigned char info[kInfoBytes] = {};
  socklen_t length = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &length) != 0) return false;
  // Every field read here but the timeouts is in kernels since Linux 4.10.
  if (length < offsetof(tcp_info, tcpi_rwnd_limited) + sizeof(std::uint64_t)) return false;
  std::memcpy(&out.retransmits, info + offsetof(tcp_info, tcpi_total_retrans), sizeof(std::uint32_t));
  std::memcpy(&out.rwnd_limited_us, info + offsetof(tcp_info, tcpi_rwnd_limited), sizeof(std::uint64_t));
  out.timeouts.reset();
  if (length >= kTotalRtoOffset + sizeof(std::uint16_t)) {
    std::uint16_t rto = 0;
    std::memcpy(&rto, info + kTotalRtoOffset, sizeof(rto));
    out.timeouts = rto;
  }
  return true;
}

}  // namespace

TcpCounts ProcessTcpCounts::take() {
  TcpCounts counts;
  std::unordered_map<ino_t, Totals> now;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return counts;
  const int own = dirfd(dir);
  while (const dirent* entry = readdir(dir)) {
    const std::string_view name(entry->d_name);
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc{} || fd == own) continue;
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    Reading r;
    if (!read_socket(fd, r)) continue;
    ++counts.connections;
    Totals before;
    if (const auto it = last_.find(st.st_ino); it != last_.end()) before = it->second;
    // Unsigned differences: the kernel's totals wrap.
    counts.retransmits += static_cast<std::uint32_t>(r.retransmits - before.retransmits);
    counts.rwnd_limited_us += r.rwnd_limited_us - before.rwnd_limited_us;
    Totals& total = now[st.st_ino];
    total.retransmits = r.retransmits;
    total.rwnd_limited_us = r.rwnd_limited_us;
    if (r.timeouts) {
      counts.timeouts = counts.timeouts.value_or(0) + static_cast<std::uint16_t>(*r.timeouts - before.timeouts);
      total.timeouts = *r.timeouts;
    }
  }
  closedir(dir);
  last_ = std::move(now);
  return counts;
}

}  // namespace xtk
