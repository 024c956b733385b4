#include "transport/rdma/device.hpp"

#include <fcntl.h>
#include <sys/resource.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace xtk::rdma {
namespace {

std::string memlock_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0) return "unknown";
  if (limit.rlim_cur == RLIM_INFINITY) return "unlimited";
  return fmt::format("{} KiB", limit.rlim_cur / 1024);
}

const char* port_state_name(ibv_port_state state) { return ibv_port_state_str(state); }

}  // namespace

std::vector<std::string> device_names() {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  std::vector<std::string> names;
  for (int i = 0; list != nullptr && i < count; ++i) names.emplace_back(ibv_get_device_name(list[i]));
  if (list != nullptr) ibv_free_device_list(list);
  return names;
}

Device::Device(const DeviceSettings& settings) : settings_(settings) {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr || count == 0) {
    if (list != nullptr) ibv_free_device_list(list);
    throw Error(
        "no RDMA device on this host (ibv_devices lists none): --transport rdma needs an InfiniBand or RoCE NIC "
        "with its driver loaded (docs/rdma.md, bring-up); use --transport tcp here");
  }
  ibv_device* chosen = nullptr;
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    names.emplace_back(ibv_get_device_name(list[i]));
    if (settings.device.empty() ? i == 0 : names.back() == settings.device) chosen = list[i];
  }
  if (chosen == nullptr) {
    ibv_free_device_list(list);
    throw Error(fmt::format("-d {}: no such RDMA device (devices: {})", settings.device, fmt::join(names, ", ")));
  }
  name_ = ibv_get_device_name(chosen);
  context_ = ibv_open_device(chosen);
  ibv_free_device_list(list);
  if (context_ == nullptr) throw Error(fmt::format("{}: cannot open the device: {}", name_, std::strerror(errno)));
  if (ibv_query_port(context_, static_cast<std::uint8_t>(settings.port), &port_) != 0) {
    ibv_close_device(context_);
    throw Error(fmt::format("{}: no port {} (--ib-port)", name_, settings.port));
  }
  if (port_.state != IBV_PORT_ACTIVE) {
    const std::string state = port_state_name(port_.state);
    ibv_close_device(context_);
    throw Error(fmt::format(
        "{} port {} is {}, not ACTIVE: check the cable and the link (ibstat {}; RoCE: ip link on its netdev)", name_,
        settings.port, state, name_));
  }
  if (port_.link_layer == IBV_LINK_LAYER_ETHERNET && settings.gid_index < 0) {
    ibv_close_device(context_);
    throw Error(fmt::format(
        "{} port {} is RoCE (Ethernet): give a GID index with -x (show_gids lists them; RoCE v2 over IPv4 is "
        "usually 3)",
        name_, settings.port));
  }
  if (settings.gid_index >= 0) {
    if (settings.gid_index >= port_.gid_tbl_len ||
        ibv_query_gid(context_, static_cast<std::uint8_t>(settings.port), settings.gid_index, &gid_) != 0) {
      ibv_close_device(context_);
      throw Error(fmt::format("-x {}: {} port {} has no such GID index (it has {}; show_gids lists them)",
                              settings.gid_index, name_, settings.port, port_.gid_tbl_len));
    }
  }
  pd_ = ibv_alloc_pd(context_);
  if (pd_ == nullptr) {
    ibv_close_device(context_);
    throw Error(fmt::format("{}: cannot allocate a protection domain: {}", name_, std::strerror(errno)));
  }
}

Device::~Device() {
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (context_ != nullptr) ibv_close_device(context_);
}

void Device::describe(QpInfo& info) const {
  info.lid = port_.lid;
  info.mtu = static_cast<std::uint8_t>(port_.active_mtu);
  std::copy(std::begin(gid_.raw), std::end(gid_.raw), info.gid.begin());
}

RegisteredBuffer::RegisteredBuffer(Device& device, std::size_t bytes) : bytes_(bytes, 0) {
  mr_ = ibv_reg_mr(device.pd(), bytes_.data(), bytes_.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr_ == nullptr) {
    const int error = errno;
    if (error == ENOMEM || error == EPERM || error == EAGAIN) {
      throw Error(fmt::format(
          "{}: cannot register {} bytes of memory: {} (RLIMIT_MEMLOCK is {}: raise it, e.g. ulimit -l unlimited, or "
          "LimitMEMLOCK=infinity for a service, or lower --msg-size / --outstanding)",
          device.name(), bytes, std::strerror(error), memlock_limit()));
    }
    throw Error(fmt::format("{}: cannot register {} bytes of memory: {}", device.name(), bytes, std::strerror(error)));
  }
}

RegisteredBuffer::~RegisteredBuffer() {
  if (mr_ != nullptr) ibv_dereg_mr(mr_);
}

CompletionQueue::CompletionQueue(Device& device, Poller& poller, int depth) : poller_(poller) {
  channel_ = ibv_create_comp_channel(device.context());
  if (channel_ == nullptr) {
    throw Error(fmt::format("{}: cannot create a completion channel: {}", device.name(), std::strerror(errno)));
  }
  cq_ = ibv_create_cq(device.context(), depth, nullptr, channel_, 0);
  if (cq_ == nullptr) {
    ibv_destroy_comp_channel(channel_);
    throw Error(
        fmt::format("{}: cannot create a completion queue of {}: {}", device.name(), depth, std::strerror(errno)));
  }
  fcntl(channel_->fd, F_SETFL, fcntl(channel_->fd, F_GETFL) | O_NONBLOCK);
  ibv_req_notify_cq(cq_, 0);
  poller_.add(channel_->fd, *this, EPOLLIN);
  poller_.add_busy_poll(*this, [this](std::int64_t now) { poll(now); });
}

CompletionQueue::~CompletionQueue() {
  poller_.forget(*this);
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
}

std::uint64_t CompletionQueue::add(CompletionHandler& handler) {
  const std::uint64_t id = next_id_++;
  handlers_.emplace(id, &handler);
  return id;
}

void CompletionQueue::on_events(std::uint32_t, std::int64_t now) {
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  unsigned events = 0;
  while (ibv_get_cq_event(channel_, &cq, &context) == 0) ++events;
  if (events > 0) ibv_ack_cq_events(cq_, events);
  ibv_req_notify_cq(cq_, 0);  // before polling: a completion after the poll raises a new event
  poll(now);
}

void CompletionQueue::poll(std::int64_t now) {
  ibv_wc wc[32];
  while (true) {
    const int n = ibv_poll_cq(cq_, 32, wc);
    if (n <= 0) return;
    for (int i = 0; i < n; ++i) {
      const auto it = handlers_.find(wc[i].wr_id);
      if (it != handlers_.end()) it->second->on_completion(wc[i], now);
    }
  }
}

ibv_qp* create_queue_pair(Device& device, CompletionQueue& cq, const DeviceSettings& settings) {
  ibv_qp_init_attr init{};
  init.send_cq = cq.cq();
  init.recv_cq = cq.cq();
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = settings.outstanding + 1;
  init.cap.max_recv_wr = settings.outstanding + 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(device.pd(), &init);
  if (qp == nullptr) {
    throw Error(fmt::format("{}: cannot create a queue pair of {} requests: {} (lower --outstanding)", device.name(),
                            settings.outstanding + 1, std::strerror(errno)));
  }
  auto init_state = to_init(settings);
  if (ibv_modify_qp(qp, &init_state.attr, init_state.mask) != 0) {
    const int error = errno;
    ibv_destroy_qp(qp);
    throw Error(fmt::format("{}: queue pair to INIT: {}", device.name(), std::strerror(error)));
  }
  return qp;
}

void connect_queue_pair(ibv_qp* qp, const DeviceSettings& settings, const QpInfo& local, const QpInfo& peer) {
  auto rtr = to_rtr(settings, local, peer);
  if (ibv_modify_qp(qp, &rtr.attr, rtr.mask) != 0) {
    throw Error(
        fmt::format("queue pair to RTR (towards QP {}, LID {}): {}", peer.qp_num, peer.lid, std::strerror(errno)));
  }
  auto rts = to_rts(local);
  if (ibv_modify_qp(qp, &rts.attr, rts.mask) != 0) {
    throw Error(fmt::format("queue pair to RTS: {}", std::strerror(errno)));
  }
}

}  // namespace xtk::rdma
