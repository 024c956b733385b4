#include "collective/job.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <cstdio>

#include "core/clock.hpp"

namespace xtk::collective {
namespace {

// Time rank 0 needs to name a culprit after a report (grace + ping), plus slack.
constexpr std::int64_t kVerdictWaitNs = 4'000'000'000;
// Clock requests on joining; the shortest round trip gives the offset.
constexpr int kClockRounds = 16;

std::string master_text(const World& w) {
  const bool v6 = w.master_host.find(':') != std::string::npos;
  return v6 ? fmt::format("[{}]:{}", w.master_host, w.master_port) : fmt::format("{}:{}", w.master_host, w.master_port);
}

}  // namespace

Job::Job(World world, std::uint32_t ranks_per_process, std::int64_t timeout_ns, std::string tool)
    : world_(std::move(world)), ranks_per_process_(ranks_per_process), timeout_ns_(timeout_ns), tool_(std::move(tool)) {
  // Gloo writes to its peers with writev: a peer that died must be an error
  // this rank can name, not a SIGPIPE that kills it without a word.
  std::signal(SIGPIPE, SIG_IGN);
  if (world_.rank == 0) {
    ServerTimes times;
    times.join_ns = timeout_ns_;
    server_ = std::make_unique<ControlServer>(world_.world_size, world_.master_port, times);
  }
  client_ = std::make_unique<ControlClient>(master_text(world_), world_.rank, world_.world_size, timeout_ns_, progress_,
                                            [this](const std::string& reason) { die(reason); });
  clock_ = client_->clock_offset(kClockRounds, deadline());
}

Job::~Job() = default;

std::int64_t Job::deadline() const { return monotonic_ns() + timeout_ns_; }

void Job::barrier(const std::string& what) {
  progress_.advance();
  if (!client_->barrier(fmt::format("b{}", ++sequence_), deadline())) {
    throw CollectiveError(
        fmt::format("{}: not every rank arrived within {:.0f} s", what, static_cast<double>(timeout_ns_) / 1e9));
  }
}

std::vector<std::string> Job::gather(const std::string& what, const std::string& value) {
  progress_.advance();
  const auto name = fmt::format("g{}", ++sequence_);
  client_->set(fmt::format("{}/{}", name, world_.rank), value);
  std::vector<std::string> values;
  if (world_.rank != 0) return values;
  const auto until = deadline();
  for (std::uint32_t r = 0; r < world_.world_size; ++r) {
    auto v = client_->get(fmt::format("{}/{}", name, r), until, true);
    if (!v) {
      throw CollectiveError(
          fmt::format("{}: rank {} did not report within {:.0f} s", what, r, static_cast<double>(timeout_ns_) / 1e9));
    }
    values.push_back(std::move(*v));
  }
  return values;
}

std::string Job::broadcast(const std::string& what, const std::string& value) {
  progress_.advance();
  const auto key = fmt::format("c{}", ++sequence_);
  if (world_.rank == 0) client_->set(key, value);
  auto v = client_->get(key, deadline());
  if (!v) {
    throw CollectiveError(
        fmt::format("{}: rank 0's value did not arrive within {:.0f} s", what, static_cast<double>(timeout_ns_) / 1e9));
  }
  return *v;
}

void Job::fail(FailKind kind, const std::string& reason) {
  client_->fail(kind, reason);
  // Rank 0 answers with an abort that names the culprit; the reader thread exits with it.
  timespec pause{kVerdictWaitNs / 1'000'000'000, kVerdictWaitNs % 1'000'000'000};
  nanosleep(&pause, nullptr);
  die(fmt::format("{} (rank 0 gave no verdict)", reason));
}

void Job::finish() {
  progress_.set_where("finishing");
  barrier("the end of the run");
  client_->bye();
  if (server_) server_->wait_done(timeout_ns_);
  client_.reset();
  server_.reset();
}

void Job::die(const std::string& message) {
  static std::atomic<bool> dying{false};
  if (dying.exchange(true)) {
    for (;;) pause();  // the first caller exits the process
  }
  std::fflush(stdout);
  std::fprintf(stderr, "%s: error: [rank %u] %s\n", tool_.c_str(), world_.rank, message.c_str());
  std::fflush(stderr);
  std::function<void()> hook;
  {
    std::lock_guard lock(hook_mutex_);
    hook = abort_hook_;
  }
  if (hook) {
    alarm(10);  // an abort that hangs (a wedged GPU) must not keep the process
    hook();
  }
  _exit(1);
}

}  // namespace xtk::collective
