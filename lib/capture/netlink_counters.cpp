// An interface's statistics (the counters of /sys/class/net/IF/statistics)
// from one RTM_GETSTATS request per sample: every counter from the same
// instant, for one request and reply (~7 us here for all 24) instead of a
// pread per counter (~1.7 us each).
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "capture/counter_source.hpp"

namespace xtk::capture {
namespace {

// The sysfs file name of each field of struct rtnl_link_stats64.
struct StatField {
  const char* name;
  std::size_t offset;
};
#define XTK_STAT(field) \
  StatField { #field, offsetof(rtnl_link_stats64, field) }
constexpr std::array kStatFields = {
    XTK_STAT(rx_packets),        XTK_STAT(tx_packets),        XTK_STAT(rx_bytes),         XTK_STAT(tx_bytes),
    XTK_STAT(rx_errors),         XTK_STAT(tx_errors),         XTK_STAT(rx_dropped),       XTK_STAT(tx_dropped),
    XTK_STAT(multicast),         XTK_STAT(collisions),        XTK_STAT(rx_length_errors), XTK_STAT(rx_over_errors),
    XTK_STAT(rx_crc_errors),     XTK_STAT(rx_frame_errors),   XTK_STAT(rx_fifo_errors),   XTK_STAT(rx_missed_errors),
    XTK_STAT(tx_aborted_errors), XTK_STAT(tx_carrier_errors), XTK_STAT(tx_fifo_errors),   XTK_STAT(tx_heartbeat_errors),
    XTK_STAT(tx_window_errors),  XTK_STAT(rx_compressed),     XTK_STAT(tx_compressed),    XTK_STAT(rx_nohandler),
};
#undef XTK_STAT

class NetlinkCounters final : public CounterSource {
 public:
  NetlinkCounters(const std::string& interface, int fd, unsigned ifindex, std::vector<std::size_t> offsets,
                  std::vector<std::string> names)
      : fd_(fd), ifindex_(ifindex), offsets_(std::move(offsets)) {
    name_ = "net:" + interface;
    counters_ = std::move(names);
  }
  ~NetlinkCounters() override { ::close(fd_); }
  NetlinkCounters(const NetlinkCounters&) = delete;
  NetlinkCounters& operator=(const NetlinkCounters&) = delete;

  // The interface's statistics now; false (errno set) when it is gone.
  bool fetch(rtnl_link_stats64& stats) {
    struct {
      nlmsghdr header;
      if_stats_msg body;
    } request{};
    request.header.nlmsg_len = sizeof request;
    request.header.nlmsg_type = RTM_GETSTATS;
    request.header.nlmsg_flags = NLM_F_REQUEST;
    request.header.nlmsg_seq = ++sequence_;
    request.body.ifindex = static_cast<int>(ifindex_);
    request.body.filter_mask = IFLA_STATS_FILTER_BIT(IFLA_STATS_LINK_64);
    // A signal (the SIGINT that ends a run) must not read as the interface going away.
    ssize_t n = 0;
    while ((n = send(fd_, &request, sizeof request, 0)) < 0 && errno == EINTR) {
    }
    if (n != static_cast<ssize_t>(sizeof request)) return false;
    alignas(nlmsghdr) char reply[1024];
    while ((n = recv(fd_, reply, sizeof reply, 0)) < 0 && errno == EINTR) {
    }
    if (n < static_cast<ssize_t>(sizeof(nlmsghdr))) {
      if (n >= 0) errno = EPROTO;
      return false;
    }
    const auto* header = reinterpret_cast<const nlmsghdr*>(reply);
    if (header->nlmsg_type == NLMSG_ERROR) {
      const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(header));
      errno = error->error != 0 ? -error->error : EPROTO;
      return false;
    }
    if (header->nlmsg_type != RTM_NEWSTATS || header->nlmsg_seq != sequence_ ||
        header->nlmsg_len > static_cast<std::size_t>(n)) {
      errno = EPROTO;
      return false;
    }
    // The attributes after the if_stats_msg: IFLA_STATS_LINK_64 is the one asked for.
    const std::size_t start = NLMSG_LENGTH(sizeof(if_stats_msg));
    for (std::size_t at = start; at + sizeof(rtattr) <= header->nlmsg_len;) {
      const auto* attribute = reinterpret_cast<const rtattr*>(reply + at);
      if (attribute->rta_len < sizeof(rtattr) || at + attribute->rta_len > header->nlmsg_len) break;
      if (attribute->rta_type == IFLA_STATS_LINK_64) {
        stats = {};
        std::memcpy(&stats, RTA_DATA(attribute), std::min<std::size_t>(RTA_PAYLOAD(attribute), sizeof stats));
        return true;
      }
      at += RTA_ALIGN(attribute->rta_len);
    }
    errno = EPROTO;
    return false;
  }

  bool read(std::uint64_t* values) override {
    rtnl_link_stats64 stats{};
    if (!fetch(stats)) {
      why_ = fmt::format("RTM_GETSTATS failed: {} (the interface went away?)", std::strerror(errno));
      return false;
    }
    const auto* base = reinterpret_cast<const unsigned char*>(&stats);
    for (std::size_t i = 0; i < offsets_.size(); ++i) std::memcpy(&values[i], base + offsets_[i], sizeof values[i]);
    return true;
  }

 private:
  int fd_;
  unsigned ifindex_;
  std::vector<std::size_t> offsets_;  // of each counter in rtnl_link_stats64
  std::uint32_t sequence_ = 0;
};

}  // namespace

std::unique_ptr<CounterSource> open_netlink_counters(const std::string& interface,
                                                     const std::vector<std::string>& counters) {
  std::vector<std::size_t> offsets;
  for (const auto& counter : counters) {
    const auto* field =
        std::find_if(kStatFields.begin(), kStatFields.end(), [&](const StatField& f) { return counter == f.name; });
    if (field == kStatFields.end()) return nullptr;  // a counter this kernel has and these headers do not
    offsets.push_back(field->offset);
  }
  const unsigned ifindex = if_nametoindex(interface.c_str());
  if (ifindex == 0) return nullptr;
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return nullptr;
  auto source = std::make_unique<NetlinkCounters>(interface, fd, ifindex, std::move(offsets), counters);
  rtnl_link_stats64 probe{};
  if (!source->fetch(probe)) return nullptr;  // a kernel without RTM_GETSTATS: sysfs serves
  return source;
}

}  // namespace xtk::capture
