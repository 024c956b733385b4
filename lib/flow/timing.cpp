#include "flow/timing.hpp"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "core/cpu_latency.hpp"
#include "core/cpus.hpp"
#include "core/error.hpp"
#include "core/kernel_files.hpp"
#include "core/units.hpp"

namespace xtk {
namespace {

constexpr int kWorkerPriority = 50;

// The calling thread at the workers' SCHED_FIFO priority, or back to normal.
bool set_thread_fifo(bool on) {
  sched_param param{};
  param.sched_priority = on ? kWorkerPriority : 0;
  return pthread_setschedparam(pthread_self(), on ? SCHED_FIFO : SCHED_OTHER, &param) == 0;
}

// Tried on a thread of its own, so the caller keeps its scheduling.
bool fifo_permitted() {
  bool permitted = false;
  std::thread probe([&permitted] { permitted = set_thread_fifo(true); });
  probe.join();
  return permitted;
}

}  // namespace

CpuChoice choose_worker_cpus(const std::vector<int>& allowed,
                             const std::map<std::string, std::vector<int>>& interrupt_cpus) {
  std::set<int> busy;
  std::vector<std::string> with_interrupts;
  for (const auto& [interface, cpus] : interrupt_cpus) {
    if (cpus.empty()) continue;
    with_interrupts.push_back(interface);
    busy.insert(cpus.begin(), cpus.end());
  }
  if (with_interrupts.empty()) {
    std::vector<std::string> names;
    names.reserve(interrupt_cpus.size());
    for (const auto& entry : interrupt_cpus) names.push_back(entry.first);
    if (names.empty()) return {{}, "not pinned: no destination known before the start"};
    return {{},
            fmt::format("not pinned: {} take{} no device interrupts", fmt::join(names, ", "),
                        names.size() == 1 ? "s" : "")};
  }
  std::vector<int> away;
  for (int cpu : allowed) {
    if (busy.count(cpu) == 0) away.push_back(cpu);
  }
  const std::string whose = fmt::format("{}'s interrupts go to CPU {}", fmt::join(with_interrupts, " and "),
                                        cpu_list_text({busy.begin(), busy.end()}));
  if (away.empty()) return {{}, fmt::format("not pinned: {}, all this process may use", whose)};
  if (away.size() == allowed.size()) return {{}, fmt::format("not pinned: {}, none this process uses", whose)};
  return {away, whose};
}

std::string route_interface(const SocketAddress& to) {
  // A connected UDP socket sends nothing, but makes the kernel pick the
  // route and so the source address.
  const int fd = socket(to.family(), SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  const bool found = connect(fd, reinterpret_cast<const sockaddr*>(&to.storage), to.length) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0;
  close(fd);
  if (!found) return "";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string name;
  for (const ifaddrs* a = list; a != nullptr && name.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != local.ss_family) continue;
    if (local.ss_family == AF_INET) {
      const auto* mine = reinterpret_cast<const sockaddr_in*>(&local);
      const auto* theirs = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      if (mine->sin_addr.s_addr == theirs->sin_addr.s_addr) name = a->ifa_name;
    } else if (local.ss_family == AF_INET6) {
      const auto* mine = reinterpret_cast<const sockaddr_in6*>(&local);
      const auto* theirs = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
      if (std::memcmp(&mine->sin6_addr, &theirs->sin6_addr, sizeof mine->sin6_addr) == 0) name = a->ifa_name;
    }
  }
  freeifaddrs(list);
  return name;
}

std::vector<int> interface_interrupt_cpus(const std::string& interface) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path device = fs::path("/sys/class/net") / interface / "device";
  // A PCI NIC lists its MSI interrupts itself; a virtio NIC's are its PCI parent's.
  std::vector<std::string> irqs;
  for (const fs::path& dir : {device / "msi_irqs", device / ".." / "msi_irqs"}) {
    if (!irqs.empty()) break;
    for (const auto& entry : fs::directory_iterator(dir, ec)) irqs.push_back(entry.path().filename().string());
  }
  if (irqs.empty()) {
    const std::string legacy = read_first_line(device / "irq");
    if (!legacy.empty() && legacy != "0") irqs.push_back(legacy);
  }
  std::set<int> cpus;
  for (const auto& irq : irqs) {
    const fs::path dir = fs::path("/proc/irq") / irq;
    std::string list = read_first_line(dir / "effective_affinity_list");
    if (list.empty()) list = read_first_line(dir / "smp_affinity_list");
    if (list.empty()) continue;
    try {
      for (int cpu : parse_cpu_list(list, dir.string())) cpus.insert(cpu);
    } catch (const UsageError&) {
      continue;  // a CPU offline since: it takes nothing now
    }
  }
  return {cpus.begin(), cpus.end()};
}

Timing::Timing(const TimingRequest& request, const std::vector<SocketAddress>& destinations) {
  std::vector<std::string> lacked;
  if (request.realtime) {
    realtime_ = fifo_permitted();
    if (!realtime_) lacked.emplace_back("no SCHED_FIFO (needs root or CAP_SYS_NICE)");
  }

  switch (request.pinning) {
    case CpuPinning::list:
      cpus_ = request.cpus;
      each_own_ = true;
      cpus_why_ = "--cpus";
      break;
    case CpuPinning::none:
      cpus_why_ = "not pinned: --cpus none";
      break;
    case CpuPinning::automatic: {
      std::map<std::string, std::vector<int>> interrupts;
      for (const auto& to : destinations) {
        const std::string name = route_interface(to);
        if (!name.empty() && interrupts.count(name) == 0) interrupts[name] = interface_interrupt_cpus(name);
      }
      CpuChoice choice = choose_worker_cpus(allowed_cpus(), interrupts);
      cpus_ = std::move(choice.cpus);
      cpus_why_ = std::move(choice.why);
      break;
    }
  }

  // Without a cpuidle driver the request is kept by polling where the workers wake.
  const std::vector<int> wake_cpus = cpus_.empty() ? allowed_cpus() : cpus_;
  if (request.cpu_wake_latency_ns == kWakeLatencyAuto) {
    try {
      wake_latency_ = std::make_unique<CpuLatencyRequest>(0, "PM QoS", wake_cpus);
    } catch (const Error&) {
      lacked.emplace_back("no PM QoS request (needs root)");
    }
  } else if (request.cpu_wake_latency_ns >= 0) {
    wake_latency_ = std::make_unique<CpuLatencyRequest>(request.cpu_wake_latency_ns, "--cpu-wake-latency", wake_cpus);
  }

  if (!lacked.empty()) {
    lacking_ = fmt::format(
        "timing: {}: flow starts may be hundreds of microseconds late instead of tens "
        "(docs/flow-engine.md#timing; --no-realtime and --cpu-wake-latency none ask for less and silence this)",
        fmt::join(lacked, " and "));
  }
}

Timing::~Timing() = default;

std::string Timing::apply_to_worker(unsigned index) const {
  std::vector<std::string> refused;
  if (!cpus_.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (each_own_) {
      CPU_SET(cpus_[index % cpus_.size()], &set);
    } else {
      for (int cpu : cpus_) CPU_SET(cpu, &set);
    }
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
      refused.push_back(fmt::format("cannot run on CPU {}",
                                    each_own_ ? fmt::format("{}", cpus_[index % cpus_.size()]) : cpu_list_text(cpus_)));
    }
  }
  if (realtime_ && !set_thread_fifo(true)) refused.emplace_back("SCHED_FIFO refused; running with normal priority");
  if (refused.empty()) return "";
  return fmt::format("worker {}: {}", index, fmt::join(refused, "; "));
}

void Timing::set_worker_fifo(bool on) const {
  if (realtime_) set_thread_fifo(on);
}

std::string Timing::describe() const {
  std::string cpus;
  if (cpus_.empty()) {
    cpus = "workers " + cpus_why_;
  } else if (each_own_) {
    cpus = fmt::format("worker i on the i-th CPU of {} ({})", cpu_list_text(cpus_), cpus_why_);
  } else {
    cpus = fmt::format("workers on CPU {} ({})", cpu_list_text(cpus_), cpus_why_);
  }
  return fmt::format("{}; {}; {}", realtime_ ? "SCHED_FIFO" : "normal priority", cpus,
                     wake_latency_ ? wake_latency_->describe() : "no PM QoS request");
}

nlohmann::json Timing::to_json() const {
  return {{"realtime", realtime_},
          {"worker_cpus", cpus_},
          {"worker_cpus_why", cpus_why_},
          {"cpu_wake_latency_ns", wake_latency_ ? nlohmann::json(wake_latency_->max_wake_ns()) : nlohmann::json()},
          {"idle_poll_cpus", wake_latency_ ? wake_latency_->polled_cpus() : std::vector<int>{}},
          {"lacking", lacking_.empty() ? nlohmann::json() : nlohmann::json(lacking_)},
          {"description", describe()}};
}

}  // namespace xtk
