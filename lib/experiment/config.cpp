#include "experiment/config.hpp"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "collective/collective_flags.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "testbed/testbed.hpp"

namespace xtk {
namespace {

// The first entry of `list` that an earlier one equals; null when none does
// (a list of steps or series names each once).
template <typename T>
const T* first_repeat(const std::vector<T>& list) {
  for (auto at = list.begin(); at != list.end(); ++at) {
    if (std::find(list.begin(), at, *at) != at) return &*at;
  }
  return nullptr;
}

class Reader {
 public:
  Reader(const toml::table& root, std::string source) : root_(root), source_(std::move(source)) {}

  [[noreturn]] void fail(const toml::node* node, const std::string& what) const {
    const auto line = node ? static_cast<std::uint64_t>(node->source().begin.line) : 0;
    throw InputError(source_, line, what);
  }

  const toml::table* table(const std::string& name) {
    const toml::node* node = root_.get(name);
    if (node == nullptr) return nullptr;
    if (!node->is_table()) fail(node, fmt::format("[{}] must be a table", name));
    seen_tables_.insert(name);
    return node->as_table();
  }

  // Checks that a table holds only known keys: a typo must not pass silently.
  void known(const toml::table* t, const std::string& name, std::initializer_list<const char*> keys) {
    if (t == nullptr) return;
    for (const auto& [key, node] : *t) {
      bool ok = false;
      for (const char* k : keys) ok = ok || key.str() == k;
      if (!ok) fail(&node, fmt::format("[{}] has no key '{}'", name, key.str()));
    }
  }

  void unknown_tables(std::initializer_list<const char*> names) {
    for (const auto& [key, node] : root_) {
      bool ok = false;
      for (const char* n : names) ok = ok || key.str() == n;
      if (!ok) fail(&node, fmt::format("unknown table or key '{}'", key.str()));
    }
  }

  template <typename T>
  void get(const toml::table* t, const char* key, T& out) {
    if (t == nullptr) return;
    const toml::node* node = t->get(key);
    if (node == nullptr) return;
    if constexpr (std::is_same_v<T, std::string>) {
      if (!node->is_string()) fail(node, fmt::format("'{}' must be a string", key));
      out = node->as_string()->get();
    } else if constexpr (std::is_same_v<T, bool>) {
      if (!node->is_boolean()) fail(node, fmt::format("'{}' must be true or false", key));
      out = node->as_boolean()->get();
    } else if constexpr (std::is_same_v<T, double>) {
      if (!node->is_number()) fail(node, fmt::format("'{}' must be a number", key));
      out = number(*node);
    } else {
      out = whole_number<T>(*node, fmt::format("'{}'", key));
    }
  }

  // An integer or a float as a double (toml++'s value<double>() refuses
  // integers a double cannot hold exactly).
  static double number(const toml::node& node) {
    return node.is_integer() ? static_cast<double>(node.as_integer()->get()) : node.as_floating_point()->get();
  }

  template <typename T>
  T whole_number(const toml::node& node, std::string_view what) const {
    if (!node.is_integer() || node.as_integer()->get() < 0 ||
        static_cast<std::uint64_t>(node.as_integer()->get()) > std::numeric_limits<T>::max()) {
      fail(&node, fmt::format("{} must be a whole number from 0 to {}", what, std::numeric_limits<T>::max()));
    }
    return static_cast<T>(node.as_integer()->get());
  }

  // A duration or rate given as a string with units; `parse` throws UsageError.
  template <typename T, typename Parse>
  void get_unit(const toml::table* t, const char* key, T& out, Parse parse) {
    std::string text;
    get(t, key, text);
    if (text.empty()) return;
    try {
      out = static_cast<T>(parse(text));
    } catch (const UsageError& e) {
      fail(t->get(key), fmt::format("'{}': {}", key, e.what()));
    }
  }

  void get_list(const toml::table* t, const char* key, std::vector<std::string>& out) {
    if (t == nullptr || t->get(key) == nullptr) return;
    const toml::node* node = t->get(key);
    if (!node->is_array()) fail(node, fmt::format("'{}' must be a list of strings", key));
    out.clear();
    for (const auto& item : *node->as_array()) {
      if (!item.is_string()) fail(&item, fmt::format("'{}' must be a list of strings", key));
      out.push_back(item.as_string()->get());
    }
  }

  void get_numbers(const toml::table* t, const char* key, std::vector<double>& out) {
    if (t == nullptr || t->get(key) == nullptr) return;
    const toml::node* node = t->get(key);
    if (!node->is_array()) fail(node, fmt::format("'{}' must be a list of numbers", key));
    out.clear();
    for (const auto& item : *node->as_array()) {
      if (!item.is_number()) fail(&item, fmt::format("'{}' must be a list of numbers", key));
      out.push_back(number(item));
    }
  }

  void get_integers(const toml::table* t, const char* key, std::vector<std::uint32_t>& out) {
    if (t == nullptr || t->get(key) == nullptr) return;
    const toml::node* node = t->get(key);
    if (!node->is_array()) fail(node, fmt::format("'{}' must be a list of whole numbers", key));
    out.clear();
    for (const auto& item : *node->as_array()) {
      out.push_back(whole_number<std::uint32_t>(item, fmt::format("each of '{}'", key)));
    }
  }

  // A table of environment variables: NAME = "value", names as a shell takes them.
  void get_environment(const toml::table* t, const char* key, std::vector<std::pair<std::string, std::string>>& out) {
    if (t == nullptr || t->get(key) == nullptr) return;
    const toml::node* node = t->get(key);
    if (!node->is_table()) fail(node, fmt::format("'{}' must be a table of NAME = \"value\"", key));
    out.clear();
    for (const auto& [name, value] : *node->as_table()) {
      const std::string n(name.str());
      const bool valid =
          !n.empty() && !std::isdigit(static_cast<unsigned char>(n[0])) &&
          n.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
      if (!valid) fail(&value, fmt::format("'{}': '{}' is not an environment variable name", key, n));
      if (!value.is_string()) fail(&value, fmt::format("'{}': {} must be a string", key, n));
      out.emplace_back(n, value.as_string()->get());
    }
  }

  const toml::node* node(const toml::table* t, const char* key) const { return t ? t->get(key) : nullptr; }

 private:
  const toml::table& root_;
  std::string source_;
  std::set<std::string> seen_tables_;
};

}  // namespace

double Emulation::byte_scale(double testbed_link_bps) const {
  if (!on()) return 1.0;
  const double r = testbed_link_bps / link_bps;
  return method == EmulationMethod::bytes ? r : method == EmulationMethod::both ? std::sqrt(r) : 1.0;
}

std::uint64_t ExperimentConfig::testbed_buffer_bytes() const {
  return static_cast<std::uint64_t>(
      std::llround(static_cast<double>(bottleneck_buffer_bytes) * emulation.byte_scale(link_bps)));
}

std::uint32_t ExperimentConfig::testbed_rto_min_ms() const {
  constexpr std::int64_t kLinuxRtoMinNs = 200'000'000;  // TCP_RTO_MIN
  const double scale = emulation.time_scale(link_bps);
  if (tcp_rto_min_ns == 0 && scale == 1.0) return 0;
  const auto ns = static_cast<double>(tcp_rto_min_ns > 0 ? tcp_rto_min_ns : kLinuxRtoMinNs) * scale;
  return static_cast<std::uint32_t>(std::max(1.0, std::round(ns / 1e6)));
}

double Emulation::time_scale(double testbed_link_bps) const {
  return on() ? byte_scale(testbed_link_bps) * link_bps / testbed_link_bps : 1.0;
}

std::string_view emulation_method_name(EmulationMethod method) {
  switch (method) {
    case EmulationMethod::bytes:
      return "bytes";
    case EmulationMethod::time:
      return "time";
    case EmulationMethod::both:
      return "both";
  }
  return "?";
}

ExecutorKind parse_executor(const std::string& name) {
  for (const auto kind : {ExecutorKind::netns, ExecutorKind::slurm, ExecutorKind::hosts}) {
    if (name == executor_name(kind)) return kind;
  }
  throw UsageError(fmt::format("executor '{}': use netns, slurm or hosts", name));
}

std::string_view executor_name(ExecutorKind kind) {
  switch (kind) {
    case ExecutorKind::netns:
      return "netns";
    case ExecutorKind::slurm:
      return "slurm";
    case ExecutorKind::hosts:
      return "hosts";
  }
  return "?";
}

ExperimentConfig parse_experiment_config(const std::string& text, const std::string& source,
                                         std::optional<ExecutorKind> executor_override) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw InputError(source, static_cast<std::uint64_t>(e.source().begin.line), e.description());
  }
  ExperimentConfig c;
  c.path = source;
  Reader r(root, source);
  r.unknown_tables({"experiment", "training", "cross_traffic", "capture", "slurm", "hosts"});

  const auto* e = r.table("experiment");
  r.known(e, "experiment",
          {"name", "out", "executor", "configuration", "link", "shape_host_nics", "bottleneck_buffer",
           "congestion_control", "tcp_rto_min", "emulate_link", "emulation", "seed", "repetitions", "step_timeout"});
  r.get(e, "name", c.name);
  r.get(e, "out", c.out);
  std::string executor = "netns", configuration = "B";
  r.get(e, "executor", executor);
  r.get(e, "configuration", configuration);
  r.get(e, "shape_host_nics", c.shape_host_nics);
  try {
    c.executor = parse_executor(executor);
  } catch (const UsageError& err) {
    r.fail(r.node(e, "executor"), err.what());
  }
  const bool overridden = executor_override && *executor_override != c.executor;
  if (overridden) c.executor = *executor_override;
  // Keys only the netns testbed takes: refused beside another executor in the
  // file; with one that --executor brought, left out with a note, so that a
  // testbed config runs on a cluster as it stands.
  const auto netns_only = [&](const toml::node* n, const std::string& why) {
    if (c.executor == ExecutorKind::netns) return true;
    if (!overridden) r.fail(n, why);
    c.notes.push_back(fmt::format("{}:{}: {}: left out on the {} executor (--executor)", source, n->source().begin.line,
                                  why, executor_name(c.executor)));
    return false;
  };
  if (configuration == "A" || configuration == "B") {
    c.configuration = configuration == "A" ? Configuration::A : Configuration::B;
  } else {
    r.fail(r.node(e, "configuration"), fmt::format("configuration '{}': use A or B", configuration));
  }
  r.get_unit(e, "link", c.link_bps, parse_rate_bps);
  r.get_unit(e, "bottleneck_buffer", c.bottleneck_buffer_bytes, parse_bytes);
  r.get_unit(e, "emulate_link", c.emulation.link_bps, parse_rate_bps);
  std::string emulation = "both";
  r.get(e, "emulation", emulation);
  if (emulation == "bytes") {
    c.emulation.method = EmulationMethod::bytes;
  } else if (emulation == "time") {
    c.emulation.method = EmulationMethod::time;
  } else if (emulation == "both") {
    c.emulation.method = EmulationMethod::both;
  } else {
    r.fail(r.node(e, "emulation"), fmt::format("emulation '{}': use bytes, time or both", emulation));
  }
  if (r.node(e, "emulation") && !c.emulation.on()) {
    r.fail(r.node(e, "emulation"), "'emulation' needs 'emulate_link', the emulated cluster's link rate");
  }
  // Beyond this, the scaled flows, gradients and times stop meaning anything
  // (a flow of under a byte, a compute of days); it also keeps them finite.
  constexpr double kMostEmulationRatio = 1e4;
  if (const double ratio = c.emulation.link_bps / c.link_bps;
      c.emulation.on() && c.link_bps > 0 && (ratio > kMostEmulationRatio || ratio < 1 / kMostEmulationRatio)) {
    r.fail(r.node(e, "emulate_link"), fmt::format("'emulate_link' is {:.3g} times 'link': emulate a cluster within "
                                                  "{:g} times the testbed's link either way",
                                                  ratio, kMostEmulationRatio));
  }
  if (const auto* n = r.node(e, "bottleneck_buffer");
      n != nullptr && !netns_only(n,
                                  "'bottleneck_buffer' sets the netns testbed's queue: a real switch's buffer is "
                                  "its own")) {
    c.bottleneck_buffer_bytes = 0;
  } else if (n != nullptr && c.link_bps > 0) {
    // A bfifo's limit is a 32-bit count of bytes.
    constexpr double kMostQueueBytes = 4294967295.0;
    if (static_cast<double>(c.bottleneck_buffer_bytes) * c.emulation.byte_scale(c.link_bps) > kMostQueueBytes) {
      r.fail(n, "'bottleneck_buffer' is more than the testbed's queue can hold (4 GiB on the testbed)");
    }
    const auto least = TestbedSpec{}.min_queue_bytes();
    if (c.testbed_buffer_bytes() < least) {
      r.fail(n, fmt::format("'bottleneck_buffer' is {} bytes on the testbed, less than two of its largest packets "
                            "({} bytes): give at least {} bytes{}",
                            c.testbed_buffer_bytes(), least,
                            static_cast<std::uint64_t>(
                                std::ceil(static_cast<double>(least) / c.emulation.byte_scale(c.link_bps))),
                            c.emulation.on() ? " of the emulated cluster" : ""));
    }
  }
  if (const auto* n = r.node(e, "congestion_control");
      n != nullptr && netns_only(n,
                                 "'congestion_control' sets the netns testbed hosts' default: a real host's is its "
                                 "own net.ipv4.tcp_congestion_control")) {
    r.get(e, "congestion_control", c.congestion_control);
    if (!valid_congestion_control(c.congestion_control) || c.congestion_control.empty()) {
      r.fail(n, fmt::format("'congestion_control' '{}' is not a congestion control name ({}), e.g. cubic",
                            c.congestion_control, kCongestionControlNameRule));
    }
  }
  if (const auto* n = r.node(e, "tcp_rto_min");
      n != nullptr && netns_only(n,
                                 "'tcp_rto_min' sets the netns testbed hosts' routes: a real host's is its own "
                                 "(ip route ... rto_min)")) {
    r.get_unit(e, "tcp_rto_min", c.tcp_rto_min_ns, parse_duration_ns);
    if (c.tcp_rto_min_ns < TestbedSpec::kLeastRtoMinNs || c.tcp_rto_min_ns > TestbedSpec::kMostRtoMinNs) {
      r.fail(n, fmt::format("'tcp_rto_min' must be {} (Linux's is 200ms)", TestbedSpec::kRtoMinRange));
    }
  }
  r.get(e, "seed", c.seed);
  r.get(e, "repetitions", c.repetitions);
  r.get_unit(e, "step_timeout", c.step_timeout_ns, parse_duration_ns);
  if (c.out.empty()) c.out = "runs/" + c.name;
  if (c.step_timeout_ns <= 0) r.fail(r.node(e, "step_timeout"), "'step_timeout' must be above 0");
  if (c.link_bps <= 0) r.fail(r.node(e, "link"), "'link' must be above 0");
  if (r.node(e, "emulate_link") && !(c.emulation.link_bps > 0)) {
    r.fail(r.node(e, "emulate_link"), "'emulate_link' must be above 0");
  }
  if (c.repetitions == 0) r.fail(r.node(e, "repetitions"), "'repetitions' must be at least 1");
  for (char ch : c.name) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_')) {
      r.fail(r.node(e, "name"), fmt::format("name '{}' may hold letters, digits, '-' and '_' only", c.name));
    }
  }

  const auto* t = r.table("training");
  r.known(t, "training",
          {"backend", "model", "models", "ranks", "compute_scale", "compute_mode", "gloo_connections", "iterations",
           "warmup", "bucket", "timeout", "gpus", "command", "replay", "kineto", "env", "startup"});
  r.get(t, "backend", c.training.backend);
  if (r.node(t, "model")) {
    std::string model;
    r.get(t, "model", model);
    c.training.models = {model};
  }
  r.get_list(t, "models", c.training.models);
  r.get(t, "ranks", c.training.ranks);
  r.get(t, "compute_scale", c.training.compute_scale);
  r.get(t, "compute_mode", c.training.compute_mode);
  r.get(t, "gloo_connections", c.training.gloo_connections);
  r.get(t, "iterations", c.training.iterations);
  r.get(t, "warmup", c.training.warmup);
  r.get(t, "bucket", c.training.bucket);
  r.get_unit(t, "timeout", c.training.timeout_ns, parse_duration_ns);
  r.get_integers(t, "gpus", c.training.gpus);
  r.get(t, "command", c.training.command);
  r.get(t, "replay", c.training.replay);
  r.get(t, "kineto", c.training.kineto);
  if (r.node(t, "replay") && r.node(t, "command")) {
    r.fail(r.node(t, "replay"), "'replay' and 'command' both replace the emulator: give one of them");
  }
  if (r.node(t, "kineto") && !r.node(t, "replay")) {
    r.fail(r.node(t, "kineto"), "'kineto' is the compute of a 'replay' trace: give 'replay' too");
  }
  r.get_environment(t, "env", c.training.env);
  r.get_unit(t, "startup", c.training.startup_ns, parse_duration_ns);
  if (r.node(t, "command") && c.training.command.find_first_not_of(" \t") == std::string::npos) {
    r.fail(r.node(t, "command"), "'command' is empty: give the training script's command line, or leave it out");
  }
  if (c.training.backend != "gloo" && c.training.backend != "nccl") {
    r.fail(r.node(t, "backend"), fmt::format("backend '{}': use gloo or nccl", c.training.backend));
  }
  if (!c.training.gpus.empty() && c.executor == ExecutorKind::netns && c.training.gpus.size() < c.training.ranks) {
    r.fail(r.node(t, "gpus"),
           fmt::format("'gpus' lists {} GPUs for {} ranks on one host: give one per rank (ranks may share one: [0, 0])",
                       c.training.gpus.size(), c.training.ranks));
  }
  if (const auto* n = r.node(t, "gloo_connections")) {
    if (c.training.gloo_connections < 1 || c.training.gloo_connections > collective::kMaxGlooConnections) {
      r.fail(n, fmt::format("'gloo_connections' must be 1 to {}", collective::kMaxGlooConnections));
    } else if (c.training.backend != "gloo") {
      r.fail(n,
             "'gloo_connections' is Gloo's: NCCL's are set with [training.env] NCCL_SOCKET_NTHREADS and "
             "NCCL_NSOCKS_PERTHREAD");
    }
  }
  if (c.training.ranks < 2) r.fail(r.node(t, "ranks"), "'ranks' must be at least 2 (an all-reduce needs peers)");
  if (!(c.training.compute_scale > 0) || !std::isfinite(c.training.compute_scale)) {
    r.fail(r.node(t, "compute_scale"), "'compute_scale' must be a number above 0");
  }
  if (c.training.timeout_ns <= 0) r.fail(r.node(t, "timeout"), "'timeout' must be above 0");
  if (c.training.iterations == 0) r.fail(r.node(t, "iterations"), "'iterations' must be at least 1");
  if (c.training.models.empty()) r.fail(r.node(t, "models"), "'models' must name at least one model");
  if (const auto* m = first_repeat(c.training.models)) {
    r.fail(r.node(t, "models"), fmt::format("model '{}' is listed twice: each once", *m));
  }

  const auto* x = r.table("cross_traffic");
  r.known(x, "cross_traffic",
          {"profiles", "cdf", "loads", "warmup", "long_lived_flows", "burst_width", "burst_period", "burst_height",
           "transport", "rdma_device", "rdma_port", "gid_index", "tclass", "service_level", "message_size",
           "outstanding", "verb"});
  r.get_list(x, "profiles", c.cross_traffic.profiles);
  r.get(x, "cdf", c.cross_traffic.cdf);
  r.get_numbers(x, "loads", c.cross_traffic.loads);
  r.get_unit(x, "warmup", c.cross_traffic.warmup_ns, parse_duration_ns);
  r.get(x, "long_lived_flows", c.cross_traffic.long_lived_flows);
  r.get(x, "burst_width", c.cross_traffic.burst_width);
  r.get(x, "burst_period", c.cross_traffic.burst_period);
  r.get(x, "burst_height", c.cross_traffic.burst_height);
  r.get(x, "transport", c.cross_traffic.transport);
  auto& rdma = c.cross_traffic.rdma;
  r.get(x, "rdma_device", rdma.device);
  r.get(x, "rdma_port", rdma.port);
  r.get(x, "gid_index", rdma.gid_index);
  r.get(x, "tclass", rdma.traffic_class);
  r.get(x, "service_level", rdma.service_level);
  r.get(x, "message_size", rdma.message_size);
  r.get(x, "outstanding", rdma.outstanding);
  r.get(x, "verb", rdma.verb);
  if (c.cross_traffic.transport != "tcp" && c.cross_traffic.transport != "rdma") {
    r.fail(r.node(x, "transport"), fmt::format("transport '{}': use tcp or rdma", c.cross_traffic.transport));
  }
  try {
    to_settings(rdma);
  } catch (const UsageError& bad) {
    // The message names the tools' flag: say the config's key, on its line.
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kKeyOfFlag{
        {{"--ib-port", "rdma_port"},
         {"--gid-index", "gid_index"},
         {"--tclass", "tclass"},
         {"--sl", "service_level"},
         {"--msg-size", "message_size"},
         {"--outstanding", "outstanding"},
         {"--verb", "verb"}}};
    std::string_view what = bad.what();
    for (const auto& [flag, key] : kKeyOfFlag) {
      if (what.starts_with(flag)) {
        what.remove_prefix(flag.size());
        r.fail(r.node(x, std::string(key).c_str()), fmt::format("'{}'{}", key, what));
      }
    }
    r.fail(x, fmt::format("[cross_traffic] {}", what));
  }
  for (const auto& p : c.cross_traffic.profiles) {
    if (p != "consistent" && p != "burst" && p != "long-lived") {
      r.fail(r.node(x, "profiles"), fmt::format("profile '{}': use consistent, burst or long-lived", p));
    }
  }
  for (double load : c.cross_traffic.loads) {
    if (!(load >= 0 && load <= 1.5)) {
      r.fail(r.node(x, "loads"), fmt::format("load {} is not a share of the link (0 to 1.5)", load));
    }
  }
  if (const auto* load = first_repeat(c.cross_traffic.loads)) {
    r.fail(r.node(x, "loads"), fmt::format("load {} is listed twice: each step once", *load));
  }
  if (const auto* p = first_repeat(c.cross_traffic.profiles)) {
    r.fail(r.node(x, "profiles"), fmt::format("profile '{}' is listed twice: each series once", *p));
  }

  const auto* cap = r.table("capture");
  r.known(cap, "capture", {"counter_period", "summarize", "bin"});
  r.get(cap, "counter_period", c.capture.counter_period);
  r.get(cap, "summarize", c.capture.summarize);
  r.get(cap, "bin", c.capture.bin);

  const auto* s = r.table("slurm");
  r.known(s, "slurm", {"nodes"});
  r.get_list(s, "nodes", c.slurm.nodes);
  const auto* h = r.table("hosts");
  r.known(h, "hosts", {"file", "ssh_config"});
  r.get(h, "file", c.hosts.file);
  r.get(h, "ssh_config", c.hosts.ssh_config);
  if (r.node(h, "ssh_config") && c.hosts.ssh_config.empty()) {
    r.fail(r.node(h, "ssh_config"), "'ssh_config' is empty: give ssh's config file (ssh -F), or leave it out");
  }
  if (c.executor == ExecutorKind::hosts && c.hosts.file.empty()) {
    r.fail(h, "executor 'hosts' needs [hosts] file = \"hosts.txt\"");
  }
  return c;
}

namespace {

constexpr std::array<std::string_view, 10> kStepChoiceKeys{
    "experiment.name", "experiment.out",   "experiment.repetitions", "experiment.step_timeout", "training.model",
    "training.models", "training.timeout", "cross_traffic.loads",    "cross_traffic.profiles",  "hosts.ssh_config"};

toml::table parse_config_file(const std::string& path) {
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw InputError(path, static_cast<std::uint64_t>(e.source().begin.line), e.description());
  }
}

std::string shown(const toml::node* node) {
  if (node == nullptr) return "absent";
  std::ostringstream out;
  node->visit([&out](const auto& n) { out << n; });
  return out.str();
}

void add_changes(const toml::table* earlier, const toml::table* now, const std::string& prefix,
                 std::vector<std::string>& changes) {
  std::set<std::string> keys;
  for (const auto* t : {earlier, now}) {
    if (t == nullptr) continue;
    for (const auto& [key, node] : *t) keys.insert(std::string(key.str()));
  }
  for (const auto& key : keys) {
    const std::string name = prefix.empty() ? key : fmt::format("{}.{}", prefix, key);
    if (std::find(kStepChoiceKeys.begin(), kStepChoiceKeys.end(), name) != kStepChoiceKeys.end()) continue;
    const toml::node* a = earlier != nullptr ? earlier->get(key) : nullptr;
    const toml::node* b = now != nullptr ? now->get(key) : nullptr;
    if (prefix.empty()) {  // [experiment], [training], ...: key by key
      add_changes(a != nullptr ? a->as_table() : nullptr, b != nullptr ? b->as_table() : nullptr, name, changes);
      continue;
    }
    if (shown(a) == shown(b)) continue;
    const auto dot = name.find('.');
    changes.push_back(
        fmt::format("[{}] {} was {}, is {}", name.substr(0, dot), name.substr(dot + 1), shown(a), shown(b)));
  }
}

}  // namespace

std::vector<std::string> config_changes(const std::string& earlier, const std::string& path) {
  const toml::table a = parse_config_file(earlier);
  const toml::table b = parse_config_file(path);
  std::vector<std::string> changes;
  add_changes(&a, &b, "", changes);
  return changes;
}

ExperimentConfig load_experiment_config(const std::string& path, std::optional<ExecutorKind> executor) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open the experiment config", path));
  std::stringstream text;
  text << in.rdbuf();
  // An empty file (a wrong path, an editor's new buffer) must not run the default sweep.
  std::string line;
  bool content = false;
  while (!content && std::getline(text, line)) {
    const auto first = line.find_first_not_of(" \t\r");
    content = first != std::string::npos && line[first] != '#';
  }
  if (!content) throw InputError(path, 0, "the config is empty: give at least [experiment] name = \"...\"");
  return parse_experiment_config(text.str(), path, executor);
}

}  // namespace xtk
