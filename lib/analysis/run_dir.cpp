#include "analysis/run_dir.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "formats/csv_file.hpp"

namespace xtk::analysis {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Reads typed values out of the parsed run.json and names the line of the
// offending key in errors. nlohmann's tree keeps no positions, so the line is
// that of the key's first appearance after its parent's, which is exact for
// the flat, once-per-key objects run.json holds.
class Fields {
 public:
  Fields(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  [[noreturn]] void fail(std::initializer_list<std::string_view> keys, std::string_view what) const {
    throw InputError(path_, line_of(keys), what);
  }

  const json* find(const json& object, std::initializer_list<std::string_view> keys) const {
    const auto it = object.find(std::string(*(keys.end() - 1)));
    return it == object.end() ? nullptr : &*it;
  }

  const json& require(const json& object, std::initializer_list<std::string_view> keys) const {
    const json* value = find(object, keys);
    if (value == nullptr) throw InputError(path_, 0, fmt::format("no \"{}\": it is required", dotted(keys)));
    return *value;
  }

  std::uint64_t whole(const json& value, std::initializer_list<std::string_view> keys, std::uint64_t min) const {
    if (!value.is_number_unsigned() || value.get<std::uint64_t>() < min) {
      fail(keys, fmt::format("\"{}\" is {}: it must be a whole number >= {}", dotted(keys), value.dump(), min));
    }
    return value.get<std::uint64_t>();
  }

  double number(const json& value, std::initializer_list<std::string_view> keys, bool positive) const {
    if (!value.is_number() || (positive ? !(value.get<double>() > 0) : value.get<double>() < 0)) {
      fail(keys,
           fmt::format("\"{}\" is {}: it must be a number {} 0", dotted(keys), value.dump(), positive ? ">" : ">="));
    }
    return value.get<double>();
  }

  std::string token(const json& value, std::initializer_list<std::string_view> keys) const {
    if (!value.is_string() || !valid_token(value.get<std::string>())) {
      fail(keys, fmt::format("\"{}\" is {}: it must be a non-empty string without commas, spaces or '#'", dotted(keys),
                             value.dump()));
    }
    return value.get<std::string>();
  }

  std::string text(const json& value, std::initializer_list<std::string_view> keys) const {
    if (!value.is_string() || value.get<std::string>().empty()) {
      fail(keys, fmt::format("\"{}\" is {}: it must be a non-empty string", dotted(keys), value.dump()));
    }
    return value.get<std::string>();
  }

  static std::string dotted(std::initializer_list<std::string_view> keys) {
    std::string out;
    for (auto key : keys) {
      if (!out.empty()) out += '.';
      out += key;
    }
    return out;
  }

 private:
  std::uint64_t line_of(std::initializer_list<std::string_view> keys) const {
    std::size_t pos = 0;
    for (auto key : keys) {
      const auto found = text_.find(fmt::format("\"{}\"", key), pos);
      if (found == std::string_view::npos) return 0;
      pos = found;
    }
    return 1 + static_cast<std::uint64_t>(std::count(text_.begin(), text_.begin() + static_cast<long>(pos), '\n'));
  }

  std::string_view text_;
  const std::string& path_;
};

std::uint64_t line_at_byte(std::string_view text, std::size_t byte) {
  byte = std::min(byte, text.size());
  return 1 + static_cast<std::uint64_t>(std::count(text.begin(), text.begin() + static_cast<long>(byte), '\n'));
}

// The line of the `nth` (1-based) appearance of `key` as a key: the quoted
// name, not escaped, then a colon. 0 when not found (a name JSON escapes).
std::uint64_t line_of_key(std::string_view text, const std::string& key, std::size_t nth) {
  const std::string quoted = fmt::format("\"{}\"", key);
  for (std::size_t at = text.find(quoted); at != std::string_view::npos; at = text.find(quoted, at + 1)) {
    if (at > 0 && text[at - 1] == '\\') continue;
    const auto next = text.find_first_not_of(" \t\r\n", at + quoted.size());
    if (next == std::string_view::npos || text[next] != ':') continue;
    if (--nth == 0) return line_at_byte(text, at);
  }
  return 0;
}

// Parses run.json, refusing a key named twice in one object: nlohmann would
// keep the last value silently, and Fields' lines assume each key once.
json parse_once_per_key(std::string_view text, const std::string& path) {
  std::vector<std::set<std::string>> objects;  // the keys of each object open at this point
  std::map<std::string, std::size_t> seen;     // each name's appearances as a key so far
  const json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      objects.pop_back();
    } else if (event == json::parse_event_t::key) {
      const auto key = parsed.get<std::string>();
      const auto nth = ++seen[key];
      if (!objects.back().insert(key).second) {
        throw InputError(path, line_of_key(text, key, nth),
                         fmt::format("\"{}\" is given twice in one object: keep one", key));
      }
    }
    return true;
  };
  return json::parse(text, check);
}

}  // namespace

StepInfo parse_run_json(std::string_view text, const std::string& path, const std::string& dir, bool check_files) {
  json root;
  try {
    root = parse_once_per_key(text, path);
  } catch (const json::parse_error& e) {
    // e.byte is 1-based and points just past the offending character; the
    // message reads "[json.exception...] parse error at line L, column C: why".
    const std::string what = e.what();
    const auto column = what.find("column");
    const auto colon = what.find(": ", column == std::string::npos ? 0 : column);
    throw InputError(path, line_at_byte(text, e.byte > 0 ? e.byte - 1 : 0),
                     fmt::format("not valid JSON: {}", colon == std::string::npos ? what : what.substr(colon + 2)));
  } catch (const json::out_of_range& e) {
    // A number beyond a double's range: nlohmann gives no position, only the
    // number as written ("number overflow parsing '1e400'").
    const std::string what = e.what();
    const auto open = what.rfind('\'', what.size() - 2);
    const auto number = open == std::string::npos ? std::string() : what.substr(open + 1, what.size() - open - 2);
    const auto at = number.empty() ? std::string_view::npos : text.find(number);
    throw InputError(path, at == std::string_view::npos ? 0 : line_at_byte(text, at),
                     fmt::format("not valid JSON: {} is beyond a number's range", number.empty() ? what : number));
  } catch (const json::exception& e) {
    throw InputError(path, 0, fmt::format("not valid JSON: {}", e.what()));
  }
  if (!root.is_object()) throw InputError(path, 1, "run.json must hold a JSON object");
  const Fields f(text, path);
  StepInfo info;
  info.dir = dir;
  info.run_json = path;

  const auto version = f.whole(f.require(root, {"format_version"}), {"format_version"}, 0);
  if (version != kRunJsonFormatVersion) {
    f.fail({"format_version"}, fmt::format("format_version {} is not supported (this xtk reads version {})", version,
                                           kRunJsonFormatVersion));
  }
  if (const auto* status = f.find(root, {"status"})) {
    const std::string value = f.token(*status, {"status"});
    if (value != "ok" && value != "failed") f.fail({"status"}, fmt::format("status '{}': use ok or failed", value));
    if (value == "failed") {
      // Its files may be missing or partial: nothing more is read.
      info.failed = true;
      if (const auto* e = f.find(root, {"error"}); e && e->is_string()) info.error = e->get<std::string>();
      return info;
    }
  }
  info.step = f.whole(f.require(root, {"step"}), {"step"}, 0);
  info.model = f.token(f.require(root, {"model"}), {"model"});
  info.ranks = f.whole(f.require(root, {"ranks"}), {"ranks"}, 1);
  if (const auto* p = f.find(root, {"params"})) info.params = f.number(*p, {"params"}, true);
  if (const auto* b = f.find(root, {"bytes_per_param"})) info.bytes_per_param = f.number(*b, {"bytes_per_param"}, true);
  info.link_bps = f.number(f.require(root, {"link_bps"}), {"link_bps"}, true);

  const auto& cross = f.require(root, {"cross_traffic"});
  if (!cross.is_object()) f.fail({"cross_traffic"}, "\"cross_traffic\" must be an object");
  info.profile = f.token(f.require(cross, {"cross_traffic", "profile"}), {"cross_traffic", "profile"});
  info.load_bps = f.number(f.require(cross, {"cross_traffic", "load_bps"}), {"cross_traffic", "load_bps"}, false);
  if (const auto* v = f.find(cross, {"cross_traffic", "start_realtime_ns"})) {
    const auto zero = f.whole(*v, {"cross_traffic", "start_realtime_ns"}, 0);
    if (zero > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      f.fail({"cross_traffic", "start_realtime_ns"}, "\"cross_traffic.start_realtime_ns\" is out of range");
    }
    info.start_realtime_ns = static_cast<std::int64_t>(zero);
  }
  if (info.profile == kNoCrossTraffic && info.load_bps != 0) {
    f.fail({"cross_traffic", "load_bps"}, "profile \"none\" (no cross traffic) needs load_bps 0");
  }

  auto& plan = info.plan;
  if (const auto* v = f.find(root, {"model_profile"})) plan.model_profile = f.text(*v, {"model_profile"});
  if (const auto* v = f.find(cross, {"cross_traffic", "load_share"})) {
    plan.load_share = f.number(*v, {"cross_traffic", "load_share"}, false);
  }
  if (const auto* v = f.find(cross, {"cross_traffic", "seed"})) plan.seed = f.whole(*v, {"cross_traffic", "seed"}, 0);
  if (const auto* e = f.find(root, {"executor"})) {
    if (!e->is_object()) f.fail({"executor"}, "\"executor\" must be an object");
    plan.executor = f.token(f.require(*e, {"executor", "executor"}), {"executor", "executor"});
  }

  info.bottleneck.link_bps = info.link_bps;
  if (const auto* b = f.find(root, {"bottleneck"})) {
    if (!b->is_object()) f.fail({"bottleneck"}, "\"bottleneck\" must be an object");
    if (const auto* v = f.find(*b, {"bottleneck", "link_bps"})) {
      info.bottleneck.link_bps = f.number(*v, {"bottleneck", "link_bps"}, true);
    }
    if (const auto* v = f.find(*b, {"bottleneck", "host"})) info.bottleneck.host = f.token(*v, {"bottleneck", "host"});
    if (const auto* v = f.find(*b, {"bottleneck", "source"})) {
      info.bottleneck.source = f.token(*v, {"bottleneck", "source"});
    }
    if (const auto* v = f.find(*b, {"bottleneck", "counter"})) {
      info.bottleneck.counter = f.token(*v, {"bottleneck", "counter"});
    }
    if (const auto* v = f.find(*b, {"bottleneck", "payload_share"})) {
      info.bottleneck.payload_share = f.number(*v, {"bottleneck", "payload_share"}, true);
      if (info.bottleneck.payload_share > 1) {
        f.fail({"bottleneck", "payload_share"},
               fmt::format("\"bottleneck.payload_share\" is {}: it must be a share of the bytes counted, > 0 and <= 1",
                           v->dump()));
      }
    }
    if (info.bottleneck.source.empty() != info.bottleneck.counter.empty()) {
      f.fail({"bottleneck"}, "\"bottleneck\" needs both \"source\" and \"counter\", or neither");
    }
  }

  if (const auto* em = f.find(root, {"emulation"})) {
    if (!em->is_object()) f.fail({"emulation"}, "\"emulation\" must be an object");
    auto& e = info.emulation;
    e.link_bps = f.number(f.require(*em, {"emulation", "link_bps"}), {"emulation", "link_bps"}, true);
    e.method = f.token(f.require(*em, {"emulation", "method"}), {"emulation", "method"});
    if (e.method != "bytes" && e.method != "time" && e.method != "both") {
      f.fail({"emulation", "method"}, fmt::format("emulation method '{}': use bytes, time or both", e.method));
    }
    e.byte_scale = f.number(f.require(*em, {"emulation", "byte_scale"}), {"emulation", "byte_scale"}, true);
    e.time_scale = f.number(f.require(*em, {"emulation", "time_scale"}), {"emulation", "time_scale"}, true);
  }

  if (const auto* t = f.find(root, {"training_nic"})) {
    if (!t->is_object()) f.fail({"training_nic"}, "\"training_nic\" must be an object");
    auto& n = info.training_nic;
    n.source = f.token(f.require(*t, {"training_nic", "source"}), {"training_nic", "source"});
    n.counter = f.token(f.require(*t, {"training_nic", "counter"}), {"training_nic", "counter"});
    if (const auto* v = f.find(*t, {"training_nic", "host"})) n.host = f.token(*v, {"training_nic", "host"});
  }

  const auto& files = f.require(root, {"files"});
  if (!files.is_object()) f.fail({"files"}, "\"files\" must be an object");
  auto file = [&](const json& value, std::initializer_list<std::string_view> keys) {
    if (!value.is_string() || value.get<std::string>().empty()) {
      f.fail(keys, fmt::format("\"{}\" is {}: it must be a file name", Fields::dotted(keys), value.dump()));
    }
    const fs::path joined = fs::path(dir) / value.get<std::string>();
    if (check_files && !fs::is_regular_file(joined)) {
      f.fail(keys, fmt::format("\"{}\": {} does not exist", Fields::dotted(keys), joined.string()));
    }
    return joined.string();
  };
  // One file, or a list (one per rank, one per cross-traffic client).
  auto file_list = [&](const json& value, std::initializer_list<std::string_view> keys) {
    std::vector<std::string> paths;
    if (!value.is_array()) {
      paths.push_back(file(value, keys));
      return paths;
    }
    if (value.empty()) f.fail(keys, fmt::format("\"{}\" lists no file", Fields::dotted(keys)));
    for (const auto& name : value) paths.push_back(file(name, keys));
    return paths;
  };
  info.iterations = file_list(f.require(files, {"files", "iterations"}), {"files", "iterations"});
  if (const auto* v = f.find(files, {"files", "flows"})) info.flows = file_list(*v, {"files", "flows"});
  if (const auto* v = f.find(files, {"files", "collectives"})) {
    info.collectives = file_list(*v, {"files", "collectives"});
  }
  if (const auto* v = f.find(files, {"files", "counters"})) info.counters = file(*v, {"files", "counters"});
  if (const auto* v = f.find(files, {"files", "training_counters"})) {
    info.training_counters = file(*v, {"files", "training_counters"});
    if (info.training_nic.source.empty()) {
      f.fail({"files", "training_counters"},
             "\"files.training_counters\" needs \"training_nic\" (its \"source\" and \"counter\")");
    }
  }
  if (const auto* v = f.find(files, {"files", "trace_bins"})) {
    if (!v->is_object() || v->empty()) {
      f.fail({"files", "trace_bins"}, "\"files.trace_bins\" must be an object with \"cross\" and/or \"training\"");
    }
    for (const auto& [key, value] : v->items()) {
      if (key == "cross") {
        info.cross_bins = file_list(value, {"files", "trace_bins", "cross"});
      } else if (key == "training") {
        info.training_bins = file_list(value, {"files", "trace_bins", "training"});
      } else {
        f.fail({"files", "trace_bins", key},
               fmt::format("\"files.trace_bins.{}\" is not a traffic class: use \"cross\" or \"training\"", key));
      }
    }
  }
  return info;
}

json run_json_object(const StepInfo& i) {
  const std::string prefix = i.dir.empty() ? "" : (fs::path(i.dir) / "").string();
  const auto name = [&](const std::string& path) {
    return !prefix.empty() && path.rfind(prefix, 0) == 0 ? path.substr(prefix.size()) : path;
  };
  const auto names = [&](const std::vector<std::string>& paths) {
    if (paths.size() == 1) return json(name(paths.front()));
    auto list = json::array();
    for (const auto& p : paths) list.push_back(name(p));
    return list;
  };
  json j;
  j["format_version"] = kRunJsonFormatVersion;
  j["status"] = i.failed ? "failed" : "ok";
  if (i.failed) j["error"] = i.error;
  j["step"] = i.step;
  j["model"] = i.model;
  if (i.params) j["params"] = *i.params;
  if (i.bytes_per_param) j["bytes_per_param"] = *i.bytes_per_param;
  j["ranks"] = i.ranks;
  j["cross_traffic"] = {{"profile", i.profile}, {"load_bps", i.load_bps}};
  if (i.start_realtime_ns) j["cross_traffic"]["start_realtime_ns"] = *i.start_realtime_ns;
  if (!i.plan.model_profile.empty()) j["model_profile"] = i.plan.model_profile;
  if (i.plan.load_share) j["cross_traffic"]["load_share"] = *i.plan.load_share;
  if (i.plan.seed) j["cross_traffic"]["seed"] = *i.plan.seed;
  if (!i.plan.executor.empty()) j["executor"] = {{"executor", i.plan.executor}};
  j["link_bps"] = i.link_bps;
  json bottleneck = {{"link_bps", i.bottleneck.link_bps}};
  if (!i.bottleneck.host.empty()) bottleneck["host"] = i.bottleneck.host;
  if (i.bottleneck.payload_share != 1) bottleneck["payload_share"] = i.bottleneck.payload_share;
  if (!i.bottleneck.source.empty()) {
    bottleneck["source"] = i.bottleneck.source;
    bottleneck["counter"] = i.bottleneck.counter;
  }
  j["bottleneck"] = bottleneck;
  if (i.emulation.link_bps > 0) {
    j["emulation"] = {{"method", i.emulation.method},
                      {"link_bps", i.emulation.link_bps},
                      {"byte_scale", i.emulation.byte_scale},
                      {"time_scale", i.emulation.time_scale}};
  }
  if (!i.training_nic.source.empty()) {
    j["training_nic"] = {{"source", i.training_nic.source}, {"counter", i.training_nic.counter}};
    if (!i.training_nic.host.empty()) j["training_nic"]["host"] = i.training_nic.host;
  }
  json files = {{"iterations", names(i.iterations)}};
  if (!i.flows.empty()) files["flows"] = names(i.flows);
  if (!i.collectives.empty()) files["collectives"] = names(i.collectives);
  if (!i.counters.empty()) files["counters"] = name(i.counters);
  if (!i.training_counters.empty()) files["training_counters"] = name(i.training_counters);
  if (!i.cross_bins.empty() || !i.training_bins.empty()) {
    json bins = json::object();
    if (!i.cross_bins.empty()) bins["cross"] = names(i.cross_bins);
    if (!i.training_bins.empty()) bins["training"] = names(i.training_bins);
    files["trace_bins"] = bins;
  }
  j["files"] = files;
  return j;
}

StepInfo read_step_info(const std::string& dir) {
  const std::string path = (fs::path(dir) / "run.json").string();
  return parse_run_json(read_text_file(path, "run.json"), path, dir, true);
}

std::vector<std::string> find_step_dirs(const std::string& experiment_dir) {
  std::error_code ec;
  if (!fs::is_directory(experiment_dir, ec)) throw Error(fmt::format("{}: not a directory", experiment_dir));
  std::vector<std::string> dirs;
  if (fs::is_regular_file(fs::path(experiment_dir) / "run.json")) dirs.push_back(experiment_dir);
  for (auto it = fs::recursive_directory_iterator(experiment_dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_directory() && fs::is_regular_file(it->path() / "run.json")) dirs.push_back(it->path().string());
  }
  if (ec) throw Error(fmt::format("{}: cannot list: {}", experiment_dir, ec.message()));
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty()) {
    throw Error(fmt::format("{}: no step directories (directories holding a run.json) in it", experiment_dir));
  }
  return dirs;
}

std::string repetition_dir(const std::string& experiment_dir, std::uint32_t repetition) {
  return fmt::format("{}/rep{}", experiment_dir, repetition);
}

std::vector<std::string> repetition_dirs(const std::string& experiment_dir) {
  std::vector<std::string> dirs;
  for (std::uint32_t k = 1; fs::is_directory(repetition_dir(experiment_dir, k)); ++k) {
    dirs.push_back(repetition_dir(experiment_dir, k));
  }
  return dirs;
}

}  // namespace xtk::analysis
