#include "experiment/step.hpp"

#include <signal.h>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "analysis/run_dir.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "experiment/commands.hpp"
#include "experiment/nccl_transport.hpp"
#include "experiment/provenance.hpp"

namespace xtk {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string tail(const std::string& path, std::size_t lines = 8) {
  std::ifstream in(path);
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);) all.push_back(line);
  std::string out;
  for (std::size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "\n    " + all[i];
  return out;
}

constexpr const char* kClientRole = "cross-traffic client";

struct Role {
  std::string name;
  std::size_t host;
  std::vector<std::string> argv;
  std::string log;
  std::unique_ptr<ChildProcess> process;
};

class Step {
 public:
  Step(const ExperimentConfig& config, Executor& executor, const StepPlan& plan, const nlohmann::json& provenance)
      : c_(config),
        ex_(executor),
        plan_(plan),
        provenance_(provenance),
        dir_(plan.dir),
        ranks_(config.training.ranks) {}

  StepOutcome run(const std::atomic<bool>& interrupt) {
    const auto began = std::chrono::steady_clock::now();
    StepOutcome outcome;
    fs::remove_all(dir_);  // an incomplete earlier attempt
    fs::create_directories(dir_);
    try {
      launch();
      outcome = supervise(interrupt);
    } catch (const std::exception& e) {
      outcome.error = e.what();
    }
    stop_support_roles();
    if (!outcome.interrupted) write_run_json(outcome);
    outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return outcome;
  }

 private:
  bool cross_traffic() const { return plan_.profile != "none"; }
  // Configuration B: a separate host sends into h0's link. A: h0 sends out beside its ring.
  std::size_t sender() const { return c_.configuration == Configuration::B ? ranks_ : 0; }
  std::size_t receiver() const { return c_.configuration == Configuration::B ? 0 : ranks_; }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  void start(Role role) {
    role.process = ex_.start(role.host, role.argv, role.log);
    roles_.push_back(std::move(role));
  }

  void launch() {
    start_ns_ = realtime_ns() + training_startup_ns(c_) + ex_.start_latency_ns() + training_warmup_ns(c_, plan_);
    const std::int64_t training_start = start_ns_ + (cross_traffic() ? cross_traffic_warmup_ns(c_) : 0);
    if (cross_traffic()) {
      write_schedule();
      start({"server", receiver(), server_command(c_, kCrossTrafficPort), file("server.log"), nullptr});
      if (!c_.capture.counter_period.empty()) {
        // Only cross traffic leaves the sender (B) or reaches the receiver (A): its NIC counts it alone.
        const std::size_t host = c_.configuration == Configuration::B ? sender() : receiver();
        start({"counters", host,
               counters_command({"net:" + ex_.interface(host)}, c_.capture.counter_period, file("counters.csv")),
               file("counters.log"), nullptr});
      }
      if (c_.capture.summarize) {
        // At h0's NIC, split by port: the cross traffic, and everything else (the training ring).
        const std::string cross = fmt::format("tcp port {}", kCrossTrafficPort);
        for (const auto& [kind, filter] : {std::pair{"cross", cross}, std::pair{"training", "not (" + cross + ")"}}) {
          start(
              {fmt::format("capture ({})", kind), 0,
               capture_command(ex_.interface(0), c_.capture.bin, filter, file(fmt::format("trace_bins_{}.csv", kind))),
               file(fmt::format("capture_{}.log", kind)), nullptr});
        }
      }
      std::this_thread::sleep_for(300ms);  // the server listens before the client's warm connections
      start({kClientRole, sender(),
             client_command(c_, file("schedule.csv"), ex_.host_label(receiver()), ex_.address(receiver()),
                            kCrossTrafficPort, file("flows.csv"), start_ns_),
             file("client.json"), nullptr});
    }
    if (!c_.capture.counter_period.empty()) {
      // The host that sends the ring's traffic into rank 0 carries only the
      // ring (in A and in B): its NIC counts the training's bytes on the wire,
      // and its TCP counters the retransmissions and timeouts of that traffic
      // (through the bottleneck in B). Counts per iteration need no fine
      // period, and a 2-core testbed feels every sampler.
      start({"counters (training)", training_nic_host(),
             counters_command({"net:" + ex_.interface(training_nic_host()),
                               fmt::format("{}={},{}", analysis::kTcpCounterSource, analysis::kTcpRetransmits,
                                           analysis::kTcpTimeouts)},
                              "10ms", file("counters_training.csv")),
             file("counters_training.log"), nullptr});
    }
    const std::uint16_t master_port = static_cast<std::uint16_t>(29500 + plan_.seed % 1000);
    for (std::uint32_t r = 0; r < ranks_; ++r) {
      RankLaunch launch;
      launch.rank = r;
      launch.master = fmt::format("{}:{}", ex_.address(0), master_port);
      launch.start_realtime_ns = training_start;
      launch.iterations_path = file("iterations-{rank}.csv");
      launch.collectives_path = file("collectives-{rank}.csv");
      // On one machine every rank is a local rank of it, and NCCL would
      // otherwise reach the others over NVLink or shared memory.
      if (ex_.one_machine()) {
        launch.local_rank = r;
        launch.confine_to_interface = ex_.interface(r);
        launch.host_id = ex_.host_label(r);
      }
      start({fmt::format("rank {}", r), r, training_command(c_, plan_, launch), file(fmt::format("rank-{}.log", r)),
             nullptr});
    }
  }

  // The rank whose ring traffic goes into rank 0: Gloo's ring sends to the
  // rank before (a trace at h0 of the demo: 327 MB a step from h1, 0.4 MB of
  // ACKs from h2), NCCL's to the rank after.
  std::size_t training_nic_host() const { return c_.training.backend == "gloo" ? 1 : ranks_ - 1; }

  // A step whose NCCL traffic took a path other than the testbed's network
  // measured nothing that cross traffic could touch: it fails. A failed
  // rank's log may show such a path too (NCCL's P2P setup fails between
  // namespaces), which is then the reason to give first.
  std::optional<std::string> training_bypassed_network(bool connections_required = true) const {
    if (c_.training.backend != "nccl") return std::nullopt;
    for (const auto& role : roles_) {
      if (role.name.rfind("rank ", 0) != 0) continue;
      std::ifstream in(role.log);
      std::stringstream text;
      text << in.rdbuf();
      const std::string source = fmt::format("{} on {} (log {})", role.name, ex_.host_label(role.host), role.log);
      if (auto why = nccl_bypass(text.str(), source, ex_.one_machine() ? "NET/Socket" : "NET/", connections_required)) {
        return "training traffic did not cross the bottleneck: " + *why;
      }
    }
    return std::nullopt;
  }

  void write_schedule() {
    run_checked(schedule_command(c_, plan_, ex_.host_label(sender()), ex_.host_label(receiver()), file("schedule.csv")),
                120s);
  }

  // Waits for the training ranks; any role ending badly fails the step.
  StepOutcome supervise(const std::atomic<bool>& interrupt) {
    StepOutcome outcome;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(c_.step_timeout_ns);
    while (true) {
      if (interrupt.load()) {
        outcome.interrupted = true;
        outcome.error = "interrupted";
        return outcome;
      }
      bool training_done = true;
      for (auto& role : roles_) {
        const auto status = role.process->wait(0ms);
        const bool is_rank = role.name.rfind("rank ", 0) == 0;
        if (is_rank && !status) training_done = false;
        if (status && (*status != 0 || !is_rank)) {
          outcome.error = fmt::format("{} on {} exited with status {}; its log {}:{}", role.name,
                                      ex_.host_label(role.host), *status, role.log, tail(role.log));
          if (is_rank) {
            if (auto why = training_bypassed_network(false)) outcome.error = *why + "\n  then " + outcome.error;
          }
          return outcome;
        }
      }
      if (training_done) {
        if (auto why = training_bypassed_network()) {
          outcome.error = *why;
          return outcome;
        }
        outcome.ok = true;
        return outcome;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        outcome.error =
            fmt::format("the step did not finish within step_timeout ({})", seconds_text(c_.step_timeout_ns));
        return outcome;
      }
      std::this_thread::sleep_for(50ms);
    }
  }

  // Cross traffic and recorders end with SIGINT so they write their last
  // records; training ranks still running (a failed step) are stopped too.
  // The cross-traffic client first, then the rest: stopped together, the
  // server could close connections under flows the client still runs, and
  // they would end as failed instead of cancelled.
  void stop_support_roles() {
    const auto client = [](const Role& role) { return role.name == kClientRole; };
    for (const bool clients : {true, false}) {
      for (auto& role : roles_) {
        if (client(role) == clients) role.process->signal(SIGINT);
      }
      for (auto& role : roles_) {
        if (client(role) == clients && !role.process->wait(5s)) role.process->stop(2s);
      }
    }
  }

  void write_run_json(const StepOutcome& outcome) {
    // What analysis reads, through its run.json module.
    analysis::StepInfo info;
    info.dir = dir_.string();
    info.failed = !outcome.ok;  // a failed step keeps its record (analysis skips it); resume runs it again
    info.error = outcome.error;
    info.step = plan_.index;
    const auto model = read_model_totals(plan_.model);
    info.model = model.name;
    info.params = model.params;
    info.bytes_per_param = model.bytes_per_param;
    info.ranks = ranks_;
    info.profile = plan_.profile;
    info.load_bps = plan_.load_share * c_.link_bps;
    if (cross_traffic()) info.start_realtime_ns = start_ns_;
    info.link_bps = c_.link_bps;
    if (c_.emulation.on()) {
      info.emulation = {c_.emulation.link_bps, std::string(emulation_method_name(c_.emulation.method)),
                        c_.emulation.byte_scale(c_.link_bps), c_.emulation.time_scale(c_.link_bps)};
    }
    // The trace bins name hosts by address: so does table 7's bottleneck mark.
    info.bottleneck.link_bps = c_.link_bps;
    info.bottleneck.host = ex_.address(0);
    info.bottleneck.payload_share = ex_.payload_share().value_or(1.0);
    for (std::uint32_t r = 0; r < ranks_; ++r) {
      info.iterations.push_back(file(fmt::format("iterations-{}.csv", r)));
      // A training `command` of the user's own writes none.
      if (fs::exists(file(fmt::format("collectives-{}.csv", r)))) {
        info.collectives.push_back(file(fmt::format("collectives-{}.csv", r)));
      }
    }
    if (cross_traffic()) {
      info.flows = {file("flows.csv")};
      const bool trace = c_.capture.summarize && fs::exists(file("trace_bins_cross.csv")) &&
                         fs::exists(file("trace_bins_training.csv"));
      if (trace) {
        info.cross_bins = {file("trace_bins_cross.csv")};
        info.training_bins = {file("trace_bins_training.csv")};
      }
      if (!c_.capture.counter_period.empty() && fs::exists(file("counters.csv"))) {
        info.counters = file("counters.csv");
        // The load is what crossed the bottleneck. In A the receiver's NIC is
        // past it. In B the sender's is before it and also counts what the
        // port dropped and the sender sent again: the trace at h0, past the
        // port, is the load then, and the counters only where there is none.
        if (c_.configuration == Configuration::A || !trace) {
          info.bottleneck.source = "net:" + ex_.interface(c_.configuration == Configuration::B ? sender() : receiver());
          info.bottleneck.counter = c_.configuration == Configuration::B ? "tx_bytes" : "rx_bytes";
        }
      }
    }
    if (!c_.capture.counter_period.empty() && fs::exists(file("counters_training.csv"))) {
      info.training_counters = file("counters_training.csv");
      info.training_nic = {ex_.host_label(training_nic_host()), "net:" + ex_.interface(training_nic_host()),
                           "tx_bytes"};
    }
    // What resuming compares with its plan (rerun_reason).
    info.plan.model_profile = plan_.model;
    info.plan.load_share = plan_.load_share;
    if (cross_traffic()) info.plan.seed = plan_.seed;
    const nlohmann::json testbed = ex_.describe();
    info.plan.executor = testbed.value("executor", "");
    nlohmann::json j = analysis::run_json_object(info);
    j["executor"].update(testbed);  // its kind, then what only people read: hosts, links, queue
    // Beyond what analysis reads: enough to rerun the step from its log.
    auto roles = nlohmann::json::array();
    for (const auto& role : roles_) {
      roles.push_back({{"role", role.name},
                       {"host", ex_.host_label(role.host)},
                       {"command", shell_quote(role.argv)},
                       {"clock_offset_ns", ex_.clock_offset_ns(role.host)}});
    }
    j["roles"] = roles;
    j["provenance"] = provenance_;
    if (c_.training.backend == "nccl") {
      std::ifstream in(file("rank-0.log"));
      std::stringstream log;
      log << in.rdbuf();
      if (auto versions = nccl_versions(log.str())) j["provenance"]["nccl"] = *versions;
    }
    j["configuration"] = c_.configuration == Configuration::B ? "B" : "A";
    j["config_file"] = c_.path;
    j["start_realtime_ns"] = start_ns_;
    const std::string tmp = file("run.json.tmp");
    {
      std::ofstream out(tmp);
      out << j.dump(2) << '\n';
      if (!out) throw Error(fmt::format("{}: cannot write", tmp));
    }
    fs::rename(tmp, file("run.json"));  // last, and atomic: the step's outcome is on record
  }

  const ExperimentConfig& c_;
  Executor& ex_;
  const StepPlan& plan_;
  const nlohmann::json& provenance_;
  fs::path dir_;
  std::uint32_t ranks_;
  std::int64_t start_ns_ = 0;
  std::vector<Role> roles_;
};

}  // namespace

StepOutcome run_step(const ExperimentConfig& config, Executor& executor, const StepPlan& step,
                     const nlohmann::json& provenance, const std::atomic<bool>& interrupt) {
  Step s(config, executor, step, provenance);
  return s.run(interrupt);
}

}  // namespace xtk
