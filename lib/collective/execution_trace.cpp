#include "collective/execution_trace.hpp"

#include <zlib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <unordered_map>

#include "core/error.hpp"

namespace xtk::collective {
namespace {

using nlohmann::json;

constexpr std::string_view kStepPrefix = "ProfilerStep#";
constexpr std::uint32_t kMaxGroupRanks = 1U << 20;
// Kineto times are µs since the host's boot or the epoch; a kernel of more
// than 1000 s is not a profiled step's (and sums of them stay in range).
constexpr double kMaxTraceUs = 1e17;
constexpr double kMaxKernelUs = 1e9;

// c10d's collective names (record_param_comms' "collective_name") and ours.
struct TorchName {
  std::string_view torch, ours;
};
constexpr TorchName kTorchNames[] = {
    {"allreduce", "all-reduce"},
    {"allreduce_coalesced", "all-reduce"},
    {"barrier", "all-reduce"},
    {"allgather", "all-gather"},
    {"_allgather_base", "all-gather"},
    {"all_gather_into_tensor_coalesced", "all-gather"},
    {"reduce_scatter", "reduce-scatter"},
    {"_reduce_scatter_base", "reduce-scatter"},
    {"reduce_scatter_tensor_coalesced", "reduce-scatter"},
    {"broadcast", "broadcast"},
    {"reduce", "reduce"},
    {"alltoall", "all-to-all"},
    {"alltoall_base", "all-to-all"},
    {"send", "send"},
    {"recv", "recv"},
};

// ATen's scalar type names, as "dtype" spells them.
DataType torch_type(std::string_view name, const std::string& where) {
  static const std::map<std::string_view, DataType> types{
      {"Float", DataType::float32},  {"Half", DataType::float16}, {"BFloat16", DataType::bfloat16},
      {"Double", DataType::float64}, {"Long", DataType::int64},   {"Int", DataType::int32},
      {"Char", DataType::int8},      {"Byte", DataType::uint8},   {"Bool", DataType::uint8},
      {"UInt32", DataType::uint32},  {"UInt64", DataType::uint64}};
  const auto it = types.find(name);
  if (it == types.end()) throw InputError(where, 0, fmt::format("data type '{}' has no NCCL or Gloo type", name));
  return it->second;
}

json parse_json(const std::string& text, const std::string& path, const std::string& what) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw InputError(path, 0, fmt::format("not a JSON document ({})", what));
  return j;
}

// A value of the wrong kind deep in a file, for naming_the_file to name it.
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A JSON value of the wrong type deep in a file is that file's error.
template <typename F>
auto naming_the_file(const std::string& path, const std::string& what, F&& read) {
  try {
    return read();
  } catch (const json::exception& e) {
    throw InputError(path, 0, fmt::format("not {}: {}", what, e.what()));
  } catch (const Malformed& e) {
    throw InputError(path, 0, fmt::format("not {}: {}", what, e.what()));
  }
}

// One ET node's "attrs" as name -> value.
std::map<std::string, json> attributes(const json& node) {
  std::map<std::string, json> out;
  if (const auto it = node.find("attrs"); it != node.end() && it->is_array()) {
    for (const auto& a : *it) {
      if (a.is_object() && a.contains("name") && a.contains("value")) out[a["name"].get<std::string>()] = a["value"];
    }
  }
  return out;
}

// A whole number that fits T; nlohmann's get<T>() would cast a float or a
// larger number without a word. Only int64_t among the signed types.
template <typename T>
T whole(const json& value, std::string_view name) {
  bool fits = false;
  if (value.is_number_unsigned()) {
    fits = value.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
  } else if (value.is_number_integer()) {
    fits = std::is_signed_v<T>;
  }
  if (!fits) throw Malformed(fmt::format("\"{}\" is {}, not a whole number that fits", name, value.dump()));
  return value.is_number_unsigned() ? static_cast<T>(value.get<std::uint64_t>())
                                    : static_cast<T>(value.get<std::int64_t>());
}

template <typename T>
T attribute(const std::map<std::string, json>& attrs, const std::string& name, const std::string& where) {
  const auto it = attrs.find(name);
  if (it == attrs.end()) throw InputError(where, 0, fmt::format("no attribute \"{}\"", name));
  try {
    if constexpr (std::is_integral_v<T>) {
      return whole<T>(it->second, name);
    } else {
      return it->second.get<T>();
    }
  } catch (const std::exception&) {
    throw InputError(where, 0, fmt::format("attribute \"{}\" has the wrong type: {}", name, it->second.dump()));
  }
}

// The element counts of a call from the trace's per-rank message sizes.
Counts call_counts(const Collective& c, std::uint64_t in, std::uint64_t out, std::uint32_t group_size) {
  if (c.point_to_point()) return c.counts(in, group_size, 0);
  Counts k{.send = in, .recv = out, .param = in};
  const std::string_view name = c.name();
  if (name == "reduce-scatter") k.param = out;
  if (name == "all-to-all") k.param = group_size > 0 ? in / group_size : in;
  return k;
}

RecordedCall read_call(const json& node, const std::string& path) {
  RecordedCall call;
  call.node = whole<std::uint64_t>(node.at("id"), "id");
  const std::string where = fmt::format("{} (node {})", path, call.node);
  const auto attrs = attributes(node);
  call.rf_id = attribute<std::uint64_t>(attrs, "rf_id", where);
  call.torch_name = attribute<std::string>(attrs, "collective_name", where);
  if (call.torch_name == "wait") return call;
  const auto* known = std::find_if(std::begin(kTorchNames), std::end(kTorchNames),
                                   [&](const TorchName& n) { return n.torch == call.torch_name; });
  if (known == std::end(kTorchNames)) {
    throw InputError(where, 0,
                     fmt::format("collective '{}' is not replayed: xtk replays all-reduce, all-gather, "
                                 "reduce-scatter, broadcast, reduce, all-to-all, barrier, send, recv and wait",
                                 call.torch_name));
  }
  call.collective = &find_traced_collective(known->ours);
  call.type = torch_type(attribute<std::string>(attrs, "dtype", where), where);
  call.group.name = attribute<std::string>(attrs, "pg_name", where);
  call.group.description = attrs.contains("pg_desc") ? attrs.at("pg_desc").get<std::string>() : "";
  call.group.start = attribute<std::uint32_t>(attrs, "global_rank_start", where);
  call.group.size = attribute<std::uint32_t>(attrs, "pg_size", where);
  // c10d leaves the stride out for a group of one rank, where it means nothing.
  const auto stride = call.group.size == 1 && !attrs.contains("global_rank_stride")
                          ? std::int64_t{1}
                          : attribute<std::int64_t>(attrs, "global_rank_stride", where);
  if (stride < 0) {
    // c10d writes -1 when the group's ranks are not evenly spaced, and the trace then does not say which they are.
    throw InputError(where, 0,
                     fmt::format("{} over process group '{}', whose ranks are not evenly spaced "
                                 "(global_rank_stride {}): the trace does not name them",
                                 call.torch_name, call.group.name, stride));
  }
  call.group.stride = static_cast<std::uint32_t>(stride);
  // c10d's groups hold ranks of one job: no more than a 32-bit rank can name.
  if (call.group.size == 0 || call.group.size > kMaxGroupRanks ||
      call.group.start + std::uint64_t{call.group.size - 1} * call.group.stride > UINT32_MAX) {
    throw InputError(where, 0,
                     fmt::format("process group '{}' of {} ranks from {} by {} does not fit a job", call.group.name,
                                 call.group.size, call.group.start, call.group.stride));
  }
  const auto in = attribute<std::uint64_t>(attrs, "in_msg_nelems", where);
  const auto out = attribute<std::uint64_t>(attrs, "out_msg_nelems", where);
  call.counts = call_counts(*call.collective, std::max<std::uint64_t>(in, call.torch_name == "barrier" ? 1 : 0),
                            std::max<std::uint64_t>(out, call.torch_name == "barrier" ? 1 : 0), call.group.size);
  if (call.collective->rooted() || call.collective->point_to_point()) {
    // record_param_comms' fourth input is the root of a rooted collective, the peer of a send or recv.
    const char* what = call.collective->rooted() ? "root" : "peer";
    const auto inputs = node.find("inputs");
    const json values = inputs != node.end() && inputs->is_object() ? inputs->value("values", json()) : json();
    if (!values.is_array() || values.size() < 4 || !values[3].is_number_integer()) {
      throw InputError(where, 0, fmt::format("{} without its {} (the fourth input)", call.torch_name, what));
    }
    call.root = values[3].get<std::uint32_t>();
    if (call.root >= call.group.size) {
      throw InputError(where, 0,
                       fmt::format("{} with {} {} in process group '{}' of {} ranks", call.torch_name, what, call.root,
                                   call.group.name, call.group.size));
    }
  }
  return call;
}

// The collectives of every ProfilerStep, in execution order (node ids).
std::vector<RecordedIteration> read_execution_trace(const std::string& text, const std::string& path) {
  const json et = parse_json(text, path, "an execution trace");
  if (!et.is_object() || !et.contains("nodes") || !et["nodes"].is_array()) {
    throw InputError(path, 0, "not an execution trace: no \"nodes\" array (torch.profiler.ExecutionTraceObserver's)");
  }
  std::map<std::uint64_t, std::string> steps;  // node id -> "ProfilerStep#N"
  std::map<std::uint64_t, const json*> comms;  // record_param_comms nodes by id
  for (const auto& node : et["nodes"]) {
    if (!node.is_object() || !node.contains("id") || !node["id"].is_number_unsigned()) {
      throw InputError(path, 0, "a node without a numeric \"id\"");
    }
    const auto id = whole<std::uint64_t>(node["id"], "id");
    const std::string name = node.value("name", "");
    if (name.starts_with(kStepPrefix)) steps[id] = name;
    if (name == "record_param_comms") comms[id] = &node;
  }
  std::vector<RecordedIteration> iterations;
  std::map<std::uint64_t, std::size_t> index_of_step;
  for (const auto& [id, name] : steps) {
    index_of_step[id] = iterations.size();
    iterations.push_back(RecordedIteration{name, {}, 0, 0});
  }
  if (steps.empty()) iterations.push_back(RecordedIteration{"the whole trace", {}, 0, 0});
  // A step's calls are those recorded after it began and before the next
  // one: node ids follow the order ops started, and the backward pass's ops
  // hang under the autograd thread's root, not under the step.
  for (const auto& [id, node] : comms) {
    std::size_t iteration = 0;
    if (!steps.empty()) {
      const auto after = steps.upper_bound(id);
      if (after == steps.begin()) continue;  // before the first profiled step
      iteration = index_of_step.at(std::prev(after)->first);
    }
    iterations[iteration].calls.push_back(read_call(*node, path));
  }
  std::erase_if(iterations, [](const RecordedIteration& i) { return i.calls.empty(); });
  if (iterations.empty()) throw InputError(path, 0, "no collective (record_param_comms node) in a profiled step");
  return iterations;
}

std::int64_t us_to_ns(double us) { return static_cast<std::int64_t>(std::llround(us * 1e3)); }

// The GPU compute around the calls, from the Kineto trace: each call gets
// the busy time of the compute kernels whose launch (CPU) came after the
// previous call's and before its own. Busy time, not wall time: the
// profiler slows the CPU side, and gaps it opens are not the job's.
void add_compute_times(std::vector<RecordedIteration>& iterations, const std::string& text, const std::string& path) {
  const json trace = parse_json(text, path, "a Kineto trace");
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array()) {
    throw InputError(path, 0, "not a Kineto trace: no \"traceEvents\" array (torch.profiler's export_chrome_trace)");
  }
  struct Kernel {
    double launch_us, start_us, end_us;
    bool nccl;
  };
  std::unordered_map<std::uint64_t, double> launch_us;  // correlation -> CPU time of the launch
  std::vector<const json*> kernel_events;
  std::unordered_map<std::uint64_t, double> call_us;  // record function id -> CPU time of the call
  std::map<std::string, std::pair<double, double>> step_us;
  for (const auto& e : trace["traceEvents"]) {
    if (!e.is_object() || !e.contains("ts") || !e["ts"].is_number()) continue;
    const std::string cat = e.value("cat", "");
    const std::string name = e.value("name", "");
    const json args = e.value("args", json::object());
    if (cat == "cuda_runtime" || cat == "cuda_driver") {
      if (args.contains("correlation"))
        launch_us[whole<std::uint64_t>(args["correlation"], "correlation")] = e["ts"].get<double>();
    } else if (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset") {
      kernel_events.push_back(&e);
    } else if (cat == "cpu_op" && name == "record_param_comms" && args.contains("Record function id")) {
      call_us[whole<std::uint64_t>(args["Record function id"], "Record function id")] = e["ts"].get<double>();
    } else if (cat == "user_annotation" && name.starts_with(kStepPrefix)) {
      const double ts = e["ts"].get<double>();
      step_us[name] = {ts, ts + e.value("dur", 0.0)};
    }
  }
  std::vector<Kernel> kernels;
  for (const json* e : kernel_events) {
    const json args = e->value("args", json::object());
    const auto correlation =
        args.contains("correlation") ? whole<std::uint64_t>(args["correlation"], "correlation") : 0;
    const auto launch = launch_us.find(correlation);
    if (launch == launch_us.end()) continue;  // launched before the profiler started
    const double start = (*e)["ts"].get<double>();
    const double duration = e->value("dur", 0.0);
    if (!(duration >= 0 && duration < kMaxKernelUs && std::abs(start) < kMaxTraceUs)) {
      throw InputError(path, 0,
                       fmt::format("kernel '{}' at {} µs lasts {} µs: not a time this trace can hold",
                                   e->value("name", ""), start, duration));
    }
    kernels.push_back({launch->second, start, start + duration, e->value("name", "").starts_with("nccl")});
  }
  std::sort(kernels.begin(), kernels.end(), [](const Kernel& a, const Kernel& b) { return a.launch_us < b.launch_us; });

  for (auto& iteration : iterations) {
    const auto window = step_us.find(iteration.name);
    if (window == step_us.end()) {
      throw InputError(path, 0,
                       fmt::format("no {} in the Kineto trace: record it in the same profiler session as the "
                                   "execution trace",
                                   iteration.name));
    }
    std::vector<double> at;  // CPU time of each call
    for (const auto& call : iteration.calls) {
      const auto t = call_us.find(call.rf_id);
      if (t == call_us.end()) {
        throw InputError(path, 0,
                         fmt::format("no record_param_comms with record function id {} (execution trace node {})",
                                     call.rf_id, call.node));
      }
      at.push_back(t->second);
    }
    double last_nccl_end = 0;
    for (const auto& k : kernels) {
      if (k.nccl && k.launch_us >= window->second.first && k.launch_us < window->second.second) {
        last_nccl_end = std::max(last_nccl_end, k.end_us);
      }
    }
    std::vector<double> busy(iteration.calls.size(), 0.0);
    double overlap = 0, after_join = 0;
    for (const auto& k : kernels) {
      if (k.nccl || k.launch_us < window->second.first || k.launch_us >= window->second.second) continue;
      const auto next = std::upper_bound(at.begin(), at.end(), k.launch_us);
      if (next != at.end()) {
        busy[static_cast<std::size_t>(next - at.begin())] += k.end_us - k.start_us;
      } else if (k.start_us >= last_nccl_end) {
        after_join += k.end_us - k.start_us;
      } else {
        overlap += k.end_us - k.start_us;
      }
    }
    for (std::size_t i = 0; i < busy.size(); ++i) iteration.calls[i].compute_before_ns = us_to_ns(busy[i]);
    iteration.overlap_ns = us_to_ns(overlap);
    iteration.after_join_ns = us_to_ns(after_join);
  }
}

}  // namespace

std::vector<std::uint32_t> ProcessGroup::ranks() const {
  std::vector<std::uint32_t> out;
  for (std::uint32_t i = 0; i < size; ++i) out.push_back(start + i * stride);
  return out;
}

std::int64_t RecordedIteration::compute_ns() const {
  std::int64_t total = overlap_ns + after_join_ns;
  for (const auto& c : calls) total += c.compute_before_ns;
  return total;
}

std::string read_maybe_gzip(const std::string& path, const std::string& what) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw Error(fmt::format("{}: cannot read {}", path, what));
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const int n = gzread(file, buffer, sizeof buffer);
    if (n < 0) {
      int code = 0;
      const std::string message = gzerror(file, &code);
      gzclose(file);
      throw InputError(path, 0, fmt::format("cannot read {}: {}", what, message));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  gzclose(file);
  return text;
}

RecordedTrace parse_recorded_trace(const std::string& et_text, const std::string& et_path,
                                   const std::string& kineto_text, const std::string& kineto_path) {
  RecordedTrace trace{et_path, kineto_path, naming_the_file(et_path, "an execution trace", [&] {
                        return read_execution_trace(et_text, et_path);
                      })};
  if (!kineto_path.empty()) {
    naming_the_file(kineto_path, "a Kineto trace", [&] {
      add_compute_times(trace.iterations, kineto_text, kineto_path);
      return 0;
    });
  }
  return trace;
}

RecordedTrace read_recorded_trace(const std::string& et_path, const std::string& kineto_path) {
  const std::string et = read_maybe_gzip(et_path, "an execution trace");
  return parse_recorded_trace(et, et_path, kineto_path.empty() ? "" : read_maybe_gzip(kineto_path, "a Kineto trace"),
                              kineto_path);
}

}  // namespace xtk::collective
