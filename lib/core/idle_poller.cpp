#include "core/idle_poller.hpp"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "core/kernel_files.hpp"

namespace xtk {
namespace {

// Tells the core a spin is under way: on SMT cores the sibling gets the pipeline.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Pins the calling thread to `cpu` at SCHED_IDLE; the reason when it cannot.
std::string become_poller(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (const int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set); e != 0) {
    return fmt::format("CPU {}: cannot run there: {}", cpu, std::strerror(e));
  }
  sched_param param{};
  if (const int e = pthread_setschedparam(pthread_self(), SCHED_IDLE, &param); e != 0) {
    return fmt::format("CPU {}: SCHED_IDLE refused: {}", cpu, std::strerror(e));
  }
  return "";
}

}  // namespace

IdlePollers::IdlePollers(const std::vector<int>& cpus) {
  std::vector<std::future<std::string>> started;
  try {
    for (int cpu : cpus) {
      std::promise<std::string> ready;
      started.push_back(ready.get_future());
      threads_.emplace_back([this, cpu, ready = std::move(ready)]() mutable {
        const std::string why = become_poller(cpu);
        ready.set_value(why);
        if (!why.empty()) return;
        while (!stop_.load(std::memory_order_relaxed)) spin_pause();
      });
    }
  } catch (...) {  // no thread left behind spinning (or joinable) when one cannot start
    stop_.store(true, std::memory_order_relaxed);
    for (auto& t : threads_) t.join();
    throw;
  }
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    const std::string why = started[i].get();
    if (why.empty()) {
      polling_.push_back(cpus[i]);
      handles_.push_back(threads_[i].native_handle());
    } else {
      refused_ += refused_.empty() ? why : "; " + why;
    }
  }
}

std::int64_t IdlePollers::cpu_ns() const {
  std::int64_t total = 0;
  for (pthread_t t : handles_) {
    clockid_t clock{};
    timespec ts{};
    if (pthread_getcpuclockid(t, &clock) != 0) continue;
    if (clock_gettime(clock, &ts) == 0) total += static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }
  return total;
}

IdlePollers::~IdlePollers() {
  stop_.store(true, std::memory_order_relaxed);
  for (auto& t : threads_) t.join();
}

std::string cgroup_cpu_quota(const std::string& self_cgroup, const std::string& mounts) {
  namespace fs = std::filesystem;
  std::ifstream in(self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    // "0::/path" (v2), "N:cpu,cpuacct:/path" (v1).
    const auto first = line.find(':');
    const auto second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const bool v2 = controllers.empty();
    fs::path mount;
    if (v2) {
      // Unified alone, or beside v1 hierarchies (systemd's hybrid layout).
      mount = fs::exists(fs::path(mounts) / "cgroup.controllers") ? fs::path(mounts) : fs::path(mounts) / "unified";
    } else {
      std::istringstream list(controllers);
      std::string c;
      bool cpu = false;
      while (std::getline(list, c, ',')) cpu = cpu || c == "cpu";
      if (!cpu) continue;
      mount = fs::path(mounts) / controllers;
      if (!fs::exists(mount)) mount = fs::path(mounts) / "cpu";
    }
    // The group and each ancestor up to the root: any of their quotas binds.
    for (fs::path group = line.substr(second + 1);; group = group.parent_path()) {
      const fs::path dir = mount / group.relative_path();
      if (v2) {
        const std::string max = read_first_line(dir / "cpu.max");
        if (!max.empty() && max.rfind("max", 0) != 0) return fmt::format("cgroup {}: cpu.max {}", group.string(), max);
      } else {
        const std::string quota = read_first_line(dir / "cpu.cfs_quota_us");
        if (!quota.empty() && quota != "-1") {
          return fmt::format("cgroup {}: cpu.cfs_quota_us {}", group.string(), quota);
        }
      }
      if (!group.has_relative_path()) break;
    }
  }
  return "";
}

}  // namespace xtk
