// The idle pollers that keep a PM QoS request on kernels without a cpuidle
// driver: where they run, that they give their CPU to any other thread, and
// how the request says what it did.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/cpu_wake_latency.hpp"
#include "core/cpu_latency.hpp"
#include "core/cpus.hpp"
#include "core/idle_poller.hpp"
#include "core/kernel_files.hpp"

namespace xtk {
namespace {

namespace fs = std::filesystem;

// The threads of this process at SCHED_IDLE, with the CPUs each may use.
std::vector<std::vector<int>> idle_threads() {
  std::vector<std::vector<int>> out;
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    const pid_t tid = std::stoi(task.path().filename().string());
    if (sched_getscheduler(tid) != SCHED_IDLE) continue;
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(tid, sizeof set, &set) == 0) {
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
      }
    }
    out.push_back(cpus);
  }
  return out;
}

std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

TEST(IdlePollers, SpinPinnedAtIdlePriorityUntilTheyGo) {
  const int cpu = allowed_cpus().back();
  {
    const IdlePollers pollers({cpu});
    EXPECT_EQ(pollers.cpus(), std::vector<int>{cpu});
    EXPECT_EQ(pollers.refused(), "");
    EXPECT_EQ(idle_threads(), std::vector<std::vector<int>>{{cpu}});
    // It spins: its CPU time grows. Another process busy on that CPU (a test
    // beside this one) leaves a SCHED_IDLE thread nothing for as long as it
    // runs, so the wait is bounded but long.
    const std::int64_t before = pollers.cpu_ns();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (pollers.cpu_ns() == before && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_GT(pollers.cpu_ns(), before);
  }
  EXPECT_TRUE(idle_threads().empty());
}

// A thread of normal priority on the poller's CPU keeps nearly all of it: at
// SCHED_IDLE the poller weighs 3 against its 1,024. At normal priority the
// two would halve the CPU.
TEST(IdlePollers, GiveTheirCpuToAnyOtherThread) {
  const int cpu = allowed_cpus().back();
  const IdlePollers pollers({cpu});
  std::int64_t busy_ns = 0, polled_ns = 0;
  std::thread busy([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof set, &set), 0);
    const std::int64_t polled_before = pollers.cpu_ns();
    const std::int64_t start = thread_cpu_ns();
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < end) {
    }
    busy_ns = thread_cpu_ns() - start;
    polled_ns = pollers.cpu_ns() - polled_before;
  });
  busy.join();
  EXPECT_GT(busy_ns, 0);
  EXPECT_LT(polled_ns, busy_ns / 10) << "the poller took " << polled_ns << " ns beside " << busy_ns << " ns";
}

TEST(IdlePollers, ACpuThisProcessMayNotUseIsRefusedNotSpun) {
  const IdlePollers pollers({CPU_SETSIZE - 1});
  EXPECT_TRUE(pollers.cpus().empty());
  EXPECT_NE(pollers.refused().find("cannot run there"), std::string::npos) << pollers.refused();
  EXPECT_TRUE(idle_threads().empty());
}

class CgroupQuota : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xtk_cgroup_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& relative, const std::string& text) {
    fs::create_directories((dir_ / relative).parent_path());
    std::ofstream(dir_ / relative) << text << "\n";
  }
  std::string quota(const std::string& self) {
    write("self", self);
    return cgroup_cpu_quota((dir_ / "self").string(), (dir_ / "fs").string());
  }
  fs::path dir_;
};

TEST_F(CgroupQuota, AGroupOrAnAncestorWithAQuotaIsFound) {
  write("fs/cgroup.controllers", "cpu memory");
  write("fs/cpu.max", "max 100000");
  write("fs/a/cpu.max", "50000 100000");
  write("fs/a/b/cpu.max", "max 100000");
  EXPECT_EQ(quota("0::/a/b"), "cgroup /a: cpu.max 50000 100000");
  write("fs/a/cpu.max", "max 100000");
  EXPECT_EQ(quota("0::/a/b"), "");
}

TEST_F(CgroupQuota, CgroupV1ReadsTheCpuHierarchy) {
  write("fs/cpu,cpuacct/cpu.cfs_quota_us", "-1");
  write("fs/cpu,cpuacct/job/cpu.cfs_quota_us", "-1");
  write("fs/memory/job/cpu.cfs_quota_us", "20000");  // not the cpu controller's: ignored
  EXPECT_EQ(quota("4:memory:/job\n2:cpu,cpuacct:/job\n0::/"), "");
  write("fs/cpu,cpuacct/job/cpu.cfs_quota_us", "20000");
  EXPECT_EQ(quota("4:memory:/job\n2:cpu,cpuacct:/job\n0::/"), "cgroup /job: cpu.cfs_quota_us 20000");
  EXPECT_EQ(quota(""), "");  // nothing listed: nothing found
}

TEST(WakeLatencyText, SaysHowTheRequestIsKept) {
  EXPECT_EQ(wake_latency_text(-1, "", {}, ""), "no PM QoS request");
  EXPECT_EQ(wake_latency_text(0, "intel_idle", {}, ""), "PM QoS 0 us");
  EXPECT_EQ(wake_latency_text(20'000, "haltpoll", {}, ""), "PM QoS 20 us");
  EXPECT_EQ(wake_latency_text(0, "", {}, ""), "PM QoS 0 us");  // no sysfs file: nothing known
  EXPECT_EQ(wake_latency_text(0, "none", {0, 1}, ""),
            "PM QoS 0 us, kept by polling CPU 0-1 at SCHED_IDLE (no cpuidle driver)");
  EXPECT_EQ(wake_latency_text(0, "none", {}, "cgroup /job: cpu.max 50000 100000"),
            "PM QoS 0 us (no effect here: no cpuidle driver, idle CPUs halt; not polled: cgroup /job: cpu.max 50000 "
            "100000)");
}

// As root: the request is held, and where the kernel has no cpuidle driver
// (nor a CPU quota) kept by pollers on the CPUs given, which go with it.
TEST(CpuLatencyRequest, PollsWhereTheKernelHasNoCpuidleDriver) {
  if (!testing::cpu_wake_latency_target()) GTEST_SKIP() << "/dev/cpu_dma_latency cannot be read here (needs root)";
  const int cpu = allowed_cpus().back();
  const bool halts = read_first_line("/sys/devices/system/cpu/cpuidle/current_driver") == "none";
  const bool quota = !cgroup_cpu_quota().empty();
  {
    const CpuLatencyRequest request(0, "test", {cpu});
    if (halts && !quota) {
      EXPECT_EQ(request.polled_cpus(), std::vector<int>{cpu});
      EXPECT_EQ(idle_threads(), std::vector<std::vector<int>>{{cpu}});
      EXPECT_NE(request.describe().find("kept by polling CPU"), std::string::npos) << request.describe();
    } else {
      EXPECT_TRUE(request.polled_cpus().empty());
      EXPECT_TRUE(idle_threads().empty());
    }
  }
  EXPECT_TRUE(idle_threads().empty());
  const CpuLatencyRequest none(-1, "test", {cpu});
  EXPECT_TRUE(none.polled_cpus().empty());
  EXPECT_EQ(none.describe(), "no PM QoS request");
}

}  // namespace
}  // namespace xtk
