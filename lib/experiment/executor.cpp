#include "experiment/executor.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "experiment/hosts_file.hpp"
#include "testbed/testbed.hpp"
#include "transport/socket.hpp"

namespace xtk {
namespace {

class NetnsExecutor final : public Executor {
 public:
  NetnsExecutor(const ExperimentConfig& config, std::size_t hosts) {
    if (auto reason = Testbed::unavailable_reason()) {
      throw Error(
          fmt::format("the netns executor cannot build its testbed: {} (run as root, or use executor = "
                      "\"slurm\" or \"hosts\")",
                      *reason));
    }
    TestbedSpec spec;
    spec.name = fmt::format("run{}", ::getpid() % 100000);
    spec.hosts = hosts;
    // The bottleneck: h0's switch port (B, cross traffic arrives from another host)
    // or h0's own NIC (A, cross traffic leaves h0 beside the training ring).
    Shaping bottleneck;
    bottleneck.where = config.configuration == Configuration::B ? Shaping::Where::port : Shaping::Where::nic;
    bottleneck.host = 0;
    bottleneck.rate_bps = config.link_bps;
    bottleneck.queue_bytes = config.testbed_buffer_bytes();
    spec.shaping.push_back(bottleneck);
    // Every other host NIC runs at the link rate too, as on the seed's switch:
    // a burst leaves its sender no faster than the link and queues there first,
    // not all at once in the bottleneck's queue.
    for (std::size_t h = 0; h < hosts && config.shape_host_nics; ++h) {
      if (config.configuration == Configuration::A && h == bottleneck.host) continue;
      Shaping nic = bottleneck;
      nic.where = Shaping::Where::nic;
      nic.host = h;
      spec.shaping.push_back(nic);
    }
    spec.congestion_control = config.congestion_control;
    spec.rto_min_ms = config.testbed_rto_min_ms();
    testbed_ = std::make_unique<Testbed>(spec);
  }

  std::size_t host_count() const override { return testbed_->spec().hosts; }
  std::string host_label(std::size_t host) const override { return Testbed::host_name(host); }
  std::string address(std::size_t host) const override { return Testbed::ipv4(host); }
  std::string interface(std::size_t /*host*/) const override { return "eth0"; }
  bool one_machine() const override { return true; }
  std::optional<double> payload_share() const override { return Testbed::tcp_payload_share(testbed_->spec().mtu); }
  std::unique_ptr<ChildProcess> start(std::size_t host, const std::vector<std::string>& argv,
                                      const std::string& log_path) override {
    return std::make_unique<ChildProcess>(testbed_->in_host(host, argv), log_path);
  }
  nlohmann::json describe() const override {
    const auto& spec = testbed_->spec();
    const auto& s = spec.shaping.front();
    nlohmann::json d = {
        {"executor", std::string(executor_name(ExecutorKind::netns))},
        {"testbed", spec.name},
        {"hosts", spec.hosts},
        {"bottleneck", fmt::format("{}:h0 {:.0f} bit/s ({})", s.where == Shaping::Where::port ? "port" : "nic",
                                   s.rate_bps, s.qdisc == Shaping::Qdisc::htb ? "htb" : "tbf")},
        {"bottleneck_queue", s.queue_bytes > 0 ? fmt::format("{} bytes (bfifo)", s.queue_bytes)
                                               : std::string("1000 packets (the qdisc's own)")},
        {"congestion_control", spec.congestion_control.empty()
                                   ? default_congestion_control() + " (this machine's default)"
                                   : spec.congestion_control},
        {"tcp_rto_min", spec.rto_min_ms > 0 ? fmt::format("{} ms (every host's route)", spec.rto_min_ms)
                                            : std::string("200 ms (the kernel's)")},
        {"host_links", spec.shaping.size() > 1 ? fmt::format("every host NIC {:.0f} bit/s (htb)", s.rate_bps)
                                               : std::string("unshaped")}};
    if (!testbed_->note().empty()) d["machine_changed"] = testbed_->note();
    return d;
  }

 private:
  std::unique_ptr<Testbed> testbed_;
};

class SlurmExecutor final : public Executor {
 public:
  SlurmExecutor(const ExperimentConfig& config, std::size_t hosts) {
    std::vector<std::string> nodes = config.slurm.nodes;
    if (nodes.empty()) {
      const char* list = std::getenv("SLURM_JOB_NODELIST");
      if (list == nullptr)
        throw Error("executor 'slurm' runs inside an allocation (sbatch or salloc): no SLURM_JOB_NODELIST");
      std::istringstream names(run_checked({"scontrol", "show", "hostnames", list}));
      for (std::string n; names >> n;) nodes.push_back(n);
    }
    if (nodes.size() < hosts) {
      throw Error(
          fmt::format("executor 'slurm': the experiment needs {} nodes ({} ranks and a cross-traffic host), "
                      "the allocation has {}",
                      hosts, hosts - 1, nodes.size()));
    }
    for (std::size_t i = 0; i < hosts; ++i) {
      HostEntry h;
      h.name = nodes[i];
      // NodeAddr, as slurmd knows it (an emulated node's name may not resolve).
      const std::string info = run_checked({"scontrol", "show", "node", "-o", h.name});
      const auto at = info.find("NodeAddr=");
      h.address = at == std::string::npos ? h.name : info.substr(at + 9, info.find(' ', at) - at - 9);
      h.interface = h.address.rfind("127.", 0) == 0 ? "lo" : "eth0";
      hosts_.push_back(h);
      const std::int64_t before = realtime_ns();
      run_checked(srun(hosts_.size() - 1, {"true"}), std::chrono::seconds(60));
      slowest_start_ns_ = std::max(slowest_start_ns_, realtime_ns() - before);
    }
  }
  // Twice the slowest srun of `true` measured at start: every role of a step
  // starts at once, on a busy cluster (or CI machine) too.
  std::int64_t start_latency_ns() const override { return 2 * slowest_start_ns_; }
  std::size_t host_count() const override { return hosts_.size(); }
  std::string host_label(std::size_t host) const override { return hosts_[host].name; }
  std::string address(std::size_t host) const override { return hosts_[host].address; }
  std::string interface(std::size_t host) const override { return hosts_[host].interface; }
  std::unique_ptr<ChildProcess> start(std::size_t host, const std::vector<std::string>& argv,
                                      const std::string& log_path) override {
    return std::make_unique<ChildProcess>(srun(host, argv), log_path);
  }
  nlohmann::json describe() const override {
    auto nodes = nlohmann::json::array();
    for (const auto& h : hosts_) nodes.push_back({{"node", h.name}, {"address", h.address}});
    return {{"executor", std::string(executor_name(ExecutorKind::slurm))},
            {"job", std::getenv("SLURM_JOB_ID") ? std::getenv("SLURM_JOB_ID") : ""},
            {"nodes", nodes},
            {"start_latency_ns", start_latency_ns()}};
  }

 private:
  std::vector<std::string> srun(std::size_t host, const std::vector<std::string>& argv) const {
    std::vector<std::string> out{"srun",      "--nodes=1", "--ntasks=1",           "--nodelist=" + hosts_[host].name,
                                 "--overlap", "--quiet",   "--kill-on-bad-exit=0", "--"};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }
  std::vector<HostEntry> hosts_;
  std::int64_t slowest_start_ns_ = 0;
};

class HostsExecutor final : public Executor {
 public:
  HostsExecutor(const ExperimentConfig& config, std::size_t hosts) : ssh_config_(config.hosts.ssh_config) {
    if (config.hosts.file.empty()) {
      throw UsageError(fmt::format("executor 'hosts' needs [hosts] file = \"hosts.txt\" in {}", config.path));
    }
    if (!ssh_config_.empty() && ::access(ssh_config_.c_str(), R_OK) != 0) {
      throw Error(fmt::format("{}: [hosts] ssh_config '{}': {}", config.path, ssh_config_, std::strerror(errno)));
    }
    hosts_ = read_hosts_file(config.hosts.file);
    if (hosts_.size() < hosts) {
      throw Error(
          fmt::format("{}: the experiment needs {} hosts, the file lists {}", config.hosts.file, hosts, hosts_.size()));
    }
    hosts_.resize(hosts);
    for (auto& h : hosts_) measure_clock(h.address);
  }
  std::size_t host_count() const override { return hosts_.size(); }
  std::string host_label(std::size_t host) const override { return hosts_[host].name; }
  std::string address(std::size_t host) const override { return hosts_[host].address; }
  std::string interface(std::size_t host) const override { return hosts_[host].interface; }
  std::int64_t clock_offset_ns(std::size_t host) const override { return offsets_[host]; }
  // Twice the slowest ssh set-up measured at start (connect, log in, start a
  // shell): every role of a step connects at once, on a busy machine too.
  std::int64_t start_latency_ns() const override { return 2 * slowest_round_trip_ns_; }
  // ssh passes our signals on (forward_signals_command); in its own process
  // group, a terminal's Ctrl-C reaches xtk-run alone, which stops the roles
  // with SIGINT through it, where ssh itself would die and leave them running.
  std::unique_ptr<ChildProcess> start(std::size_t host, const std::vector<std::string>& argv,
                                      const std::string& log_path) override {
    return std::make_unique<ChildProcess>(ssh(hosts_[host].address, forward_signals_command(argv)), log_path,
                                          ChildOptions{.own_group = true, .signals_on_stdin = true});
  }
  nlohmann::json describe() const override {
    auto hosts = nlohmann::json::array();
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
      hosts.push_back({{"name", hosts_[i].name},
                       {"address", hosts_[i].address},
                       {"clock_offset_ns", offsets_[i]},
                       {"clock_rtt_ns", clock_rtts_[i]}});
    }
    nlohmann::json j = {{"executor", std::string(executor_name(ExecutorKind::hosts))},
                        {"hosts", hosts},
                        {"start_latency_ns", start_latency_ns()}};
    if (!ssh_config_.empty()) j["ssh_config"] = ssh_config_;
    return j;
  }

 private:
  // BatchMode: a missing key fails the role instead of prompting. An
  // ssh_config decides host keys itself; without one, new hosts are accepted.
  std::vector<std::string> ssh(const std::string& address, const std::string& command) const {
    std::vector<std::string> argv{"ssh", "-o", "BatchMode=yes"};
    if (ssh_config_.empty()) {
      argv.insert(argv.end(), {"-o", "StrictHostKeyChecking=accept-new"});
    } else {
      argv.insert(argv.end(), {"-F", ssh_config_});
    }
    argv.insert(argv.end(), {address, command});
    return argv;
  }
  // The host's clock minus ours, as NTP reads it, over an open ssh session:
  // the session's set-up (connect, log in, start a shell: what a role's start
  // costs, start_latency_ns) is timed first, then a few lines each read the
  // host's clock. The quickest exchange gives the offset, its midpoint, off
  // by at most half its round trip (clock_rtt_ns); the midpoint of a whole
  // ssh run was off by most of the set-up (0.7 s on a busy machine).
  void measure_clock(const std::string& address) {
    constexpr int kExchanges = 5;
    const std::int64_t before = realtime_ns();
    ChildProcess session(ssh(address, "echo ready; while read -r _; do date +%s%N; done"), "", {.talk = true});
    // What ssh said (its errors come on the same socket) goes into the message.
    const auto failed = [&](const std::string& what, std::string said) {
      session.stop(std::chrono::milliseconds(500));
      while (auto line = session.read_line(std::chrono::milliseconds(100))) said += (said.empty() ? "" : " ") + *line;
      said += session.unread();
      return Error(fmt::format("{}: reading its clock over ssh: {}{}", address, what,
                               said.empty() ? "" : ": " + said.substr(0, 400)));
    };
    if (const auto first = session.read_line(std::chrono::seconds(20)); first != "ready") {
      throw failed(first ? "no shell" : "no shell within 20 s", first.value_or(""));
    }
    slowest_round_trip_ns_ = std::max(slowest_round_trip_ns_, realtime_ns() - before);
    std::int64_t best_rtt = std::numeric_limits<std::int64_t>::max(), offset = 0;
    for (int i = 0; i < kExchanges; ++i) {
      const std::int64_t sent = realtime_ns();
      session.write_line("");
      const auto line = session.read_line(std::chrono::seconds(5));
      const std::int64_t received = realtime_ns();
      if (!line) throw failed("no answer within 5 s", "");
      std::int64_t remote = 0;
      const auto [end, ec] = std::from_chars(line->data(), line->data() + line->size(), remote);
      if (ec != std::errc() || end != line->data() + line->size()) {
        throw failed(fmt::format("'date +%s%N' printed '{}', not the time in nanoseconds (a GNU date is needed)",
                                 line->substr(0, 80)),
                     "");
      }
      if (received - sent < best_rtt) {
        best_rtt = received - sent;
        offset = remote - (sent + received) / 2;
      }
    }
    offsets_.push_back(offset);
    clock_rtts_.push_back(best_rtt);
  }
  std::string ssh_config_;
  std::vector<HostEntry> hosts_;
  std::vector<std::int64_t> offsets_, clock_rtts_;
  std::int64_t slowest_round_trip_ns_ = 0;
};

// Runs as `sh -c WRAPPER xtk-role ARGV...` whatever the login shell. The
// reader is the background job (its stdin dup'ed to fd 3 first, as sh gives
// background jobs /dev/null) and argv the foreground one: a non-interactive
// sh starts background jobs with SIGINT ignored, which argv must not inherit.
constexpr const char* kForwardSignals =
    "exec 3<&0 </dev/null\n"
    "{ while read -r s <&3; do kill -s \"$s\" $$; done; kill -s TERM $$; } >/dev/null 2>&1 &\n"
    "exec \"$@\" 3<&-\n";

}  // namespace

std::string forward_signals_command(const std::vector<std::string>& argv) {
  std::vector<std::string> wrapped{"sh", "-c", kForwardSignals, "xtk-role"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return shell_quote(wrapped);
}

std::unique_ptr<Executor> make_executor(const ExperimentConfig& config, std::size_t hosts) {
  switch (config.executor) {
    case ExecutorKind::netns:
      return std::make_unique<NetnsExecutor>(config, hosts);
    case ExecutorKind::slurm:
      return std::make_unique<SlurmExecutor>(config, hosts);
    case ExecutorKind::hosts:
      return std::make_unique<HostsExecutor>(config, hosts);
  }
  throw Error("unknown executor");
}

}  // namespace xtk
