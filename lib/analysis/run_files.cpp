#include "analysis/run_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace xtk::analysis {

std::string read_text_file(const std::string& path, std::string_view what) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw Error(fmt::format("{}: cannot read {}: {}", path, what, std::strerror(errno)));
  std::string text;
  char buffer[1 << 16];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) text.append(buffer, n);
  if (std::ferror(file.get()) != 0)
    throw Error(fmt::format("{}: cannot read {}: {}", path, what, std::strerror(errno)));
  return text;
}

bool parse_u64(std::string_view text, std::uint64_t& value) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

bool parse_i64(std::string_view text, std::int64_t& value) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

bool parse_finite(std::string_view text, double& value) {
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(value);
}

bool valid_token(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c == ',' || c == ' ' || c == '\t' || c == '#' || c == '\r' || c == '\n') return false;
  }
  return true;
}

RunCsv::RunCsv(std::string_view content, std::string source, std::string_view magic, std::string_view columns)
    : content_(content),
      source_(std::move(source)),
      columns_(columns),
      column_count_(static_cast<std::size_t>(std::count(columns.begin(), columns.end(), ',')) + 1),
      fields_(column_count_),
      unquoted_(column_count_) {
  const std::string magic_line = fmt::format("# {}", magic);
  std::string_view line;
  if (!next_line(line)) {
    throw InputError(source_, 0,
                     fmt::format("empty file: not an {} file (the first line must be '{}')", magic, magic_line));
  }
  if (line != magic_line) fail(fmt::format("not an {} file: the first line must be '{}'", magic, magic_line));
  bool versioned = false;
  while (next_line(line)) {
    if (line.empty()) continue;
    if (line.front() != '#') {
      if (!versioned) fail("no '# format_version=N' line before the column line");
      if (line != columns_) fail(fmt::format("expected the column line '{}'", columns_));
      column_line_ = line_;
      return;
    }
    line.remove_prefix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    const auto eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;  // free-form comment
    const std::string_view key = line.substr(0, eq);
    const std::string_view value = line.substr(eq + 1);
    if (key == "format_version") {
      std::uint64_t version = 0;
      if (!parse_u64(value, version)) fail(fmt::format("format_version '{}' is not a number", value));
      if (version != kRunFilesFormatVersion) {
        fail(fmt::format("format_version {} is not supported (this xtk reads version {})", version,
                         kRunFilesFormatVersion));
      }
      versioned = true;
      continue;
    }
    for (const auto& h : header_) {
      if (h.key == key) fail(fmt::format("header key '{}' is given twice (first on line {})", key, h.line));
    }
    header_.push_back({std::string(key), std::string(value), line_});
  }
  fail(fmt::format("no column line: the header must end with '{}'", columns_));
}

std::optional<std::string_view> RunCsv::header_value(std::string_view key) const {
  for (const auto& h : header_) {
    if (h.key == key) return std::string_view(h.value);
  }
  return std::nullopt;
}

void RunCsv::fail_header(std::string_view key, std::string_view what) const {
  for (const auto& h : header_) {
    if (h.key == key) throw InputError(source_, h.line, what);
  }
  throw InputError(source_, column_line_, what);
}

bool RunCsv::next_line(std::string_view& line) {
  if (pos_ >= content_.size()) return false;
  const auto end = content_.find('\n', pos_);
  line = content_.substr(pos_, end == std::string_view::npos ? std::string_view::npos : end - pos_);
  pos_ = end == std::string_view::npos ? content_.size() : end + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  ++line_;
  return true;
}

bool RunCsv::next() {
  std::string_view line;
  while (next_line(line)) {
    if (line.empty() || line.front() == '#') continue;
    std::size_t n = 0, pos = 0;
    while (true) {
      if (n == column_count_) fail(fmt::format("more than {} fields (columns: {})", column_count_, columns_));
      if (pos < line.size() && line[pos] == '"') {
        std::string& text = unquoted_[n];
        text.clear();
        std::size_t i = pos + 1;
        while (true) {
          if (i >= line.size()) fail(fmt::format("field {} has no closing quote", n + 1));
          if (line[i] == '"') {
            if (i + 1 < line.size() && line[i + 1] == '"') {
              text += '"';
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          text += line[i++];
        }
        if (i < line.size() && line[i] != ',') fail(fmt::format("field {} has text after its closing quote", n + 1));
        fields_[n++] = text;
        if (i >= line.size()) break;
        pos = i + 1;
        continue;
      }
      const auto comma = line.find(',', pos);
      fields_[n++] = line.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
      if (comma == std::string_view::npos) break;
      pos = comma + 1;
    }
    if (n != column_count_) fail(fmt::format("{} fields, expected {} (columns: {})", n, column_count_, columns_));
    return true;
  }
  return false;
}

void RunCsv::fail(std::string_view what) const { throw InputError(source_, line_, what); }

std::uint64_t RunCsv::unsigned_field(std::size_t i, std::string_view name) const {
  std::uint64_t value = 0;
  if (!parse_u64(fields_[i], value)) fail(fmt::format("{} '{}' is not a non-negative integer", name, fields_[i]));
  return value;
}

std::int64_t RunCsv::time_field(std::size_t i, std::string_view name) const {
  std::int64_t value = 0;
  if (!parse_i64(fields_[i], value) || value < 0) {
    fail(fmt::format("{} '{}' is not a non-negative integer of nanoseconds", name, fields_[i]));
  }
  return value;
}

double RunCsv::number_field(std::size_t i, std::string_view name) const {
  double value = 0;
  if (!parse_finite(fields_[i], value)) fail(fmt::format("{} '{}' is not a number", name, fields_[i]));
  return value;
}

std::string_view RunCsv::token_field(std::size_t i, std::string_view name) const {
  if (!valid_token(fields_[i])) fail(fmt::format("{} '{}' is empty or has spaces or '#'", name, fields_[i]));
  return fields_[i];
}

void read_iterations(std::string_view content, const std::string& source, std::uint64_t ranks,
                     const std::function<void(const IterationRow&)>& row) {
  RunCsv csv(content, source, "xtk-iterations", "rank,iter,start_ns,end_ns,iter_us,comm_us,bytes");
  std::map<std::uint64_t, std::uint64_t> last_iter;  // per rank; ranks are few
  IterationRow r;
  while (csv.next()) {
    r.rank = csv.unsigned_field(0, "rank");
    r.iter = csv.unsigned_field(1, "iter");
    r.start_ns = csv.time_field(2, "start_ns");
    r.end_ns = csv.time_field(3, "end_ns");
    r.iter_us = csv.number_field(4, "iter_us");
    r.comm_us = csv.number_field(5, "comm_us");
    r.bytes = csv.unsigned_field(6, "bytes");
    if (ranks > 0 && r.rank >= ranks) {
      csv.fail(fmt::format("rank {} is not below the job's {} ranks (\"ranks\" in run.json)", r.rank, ranks));
    }
    if (r.end_ns < r.start_ns) {
      csv.fail(fmt::format("end_ns {} is before start_ns {}", r.end_ns, r.start_ns));
    }
    if (r.iter_us <= 0) csv.fail(fmt::format("iter_us {} is not above 0", csv.field(4)));
    if (r.comm_us < 0) csv.fail(fmt::format("comm_us {} is negative", csv.field(5)));
    const auto [it, first] = last_iter.try_emplace(r.rank, r.iter);
    if (!first) {
      if (r.iter <= it->second) {
        csv.fail(fmt::format("iter {} of rank {} comes after iter {}: a rank's iterations must be in increasing order",
                             r.iter, r.rank, it->second));
      }
      it->second = r.iter;
    }
    row(r);
  }
}

namespace {

std::optional<FlowStatus> parse_status(std::string_view text) {
  if (text == "ok") return FlowStatus::ok;
  if (text == "failed") return FlowStatus::failed;
  if (text == "timeout") return FlowStatus::timeout;
  if (text == "cancelled") return FlowStatus::cancelled;
  return std::nullopt;
}

// Checks shared by the CSV and JSON Lines forms; `fail` names the line.
template <typename Fail>
void check_flow(const FlowRecord& r, const Fail& fail) {
  if (r.size_bytes == 0) fail("size_bytes '0' is not a positive integer");
  if (r.status == FlowStatus::ok) {
    if (!r.start_ns || !r.end_ns) fail("status ok without a start_ns and end_ns");
    if (!r.error.empty()) fail(fmt::format("status ok with error '{}': ok flows have no error", r.error));
  }
  if (r.start_ns && r.end_ns && *r.end_ns < *r.start_ns) {
    fail(fmt::format("end_ns {} is before start_ns {}", *r.end_ns, *r.start_ns));
  }
  if (r.end_ns && !r.start_ns) fail(fmt::format("end_ns {} without a start_ns", *r.end_ns));
  if (r.fct_us < 0) fail(fmt::format("fct_us {} is negative", r.fct_us));
}

void read_flows_jsonl(std::string_view content, const std::string& source,
                      const std::function<void(const FlowRecord&)>& row) {
  std::uint64_t line_number = 0;
  std::size_t pos = 0;
  while (pos < content.size()) {
    const auto end = content.find('\n', pos);
    std::string_view line = content.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? content.size() : end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    auto fail = [&](std::string_view what) { throw InputError(source, line_number, what); };
    const auto object = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!object.is_object()) fail("not a JSON object");
    auto get = [&](const char* key) -> const nlohmann::json& {
      const auto it = object.find(key);
      if (it == object.end()) fail(fmt::format("no \"{}\"", key));
      return *it;
    };
    auto whole = [&](const char* key) {
      const auto& v = get(key);
      if (!v.is_number_unsigned()) fail(fmt::format("{} {} is not a non-negative integer", key, v.dump()));
      return v.get<std::uint64_t>();
    };
    auto time = [&](const char* key, std::int64_t min) {
      const auto& v = get(key);
      if (!v.is_number_integer() || v.get<std::int64_t>() < min) {
        fail(fmt::format("{} {} is not an integer of nanoseconds >= {}", key, v.dump(), min));
      }
      return v.get<std::int64_t>();
    };
    auto number = [&](const char* key) {
      const auto& v = get(key);
      if (!v.is_number()) fail(fmt::format("{} {} is not a number", key, v.dump()));
      return v.get<double>();
    };
    auto text = [&](const char* key) {
      const auto& v = get(key);
      if (!v.is_string()) fail(fmt::format("{} {} is not a string", key, v.dump()));
      return std::string_view(v.get_ref<const std::string&>());
    };
    FlowRecord r;
    r.flow_id = whole("flow_id");
    r.dst = text("dst");
    if (!valid_token(r.dst)) fail(fmt::format("dst '{}' is empty or has spaces or '#'", r.dst));
    r.size_bytes = whole("size_bytes");
    r.sched_start_ns = time("sched_start_ns", 0);
    const auto start = time("start_ns", -1), finish = time("end_ns", -1);
    if (start >= 0) r.start_ns = start;
    if (finish >= 0) r.end_ns = finish;
    r.fct_us = number("fct_us");
    r.lateness_us = number("lateness_us");
    const auto status = parse_status(text("status"));
    if (!status) fail(fmt::format("status '{}' is not one of ok, failed, timeout, cancelled", text("status")));
    r.status = *status;
    r.error = text("error");
    check_flow(r, fail);
    row(r);
  }
}

}  // namespace

void read_flows(std::string_view content, const std::string& source,
                const std::function<void(const FlowRecord&)>& row) {
  const auto first = content.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && content[first] == '{') {
    read_flows_jsonl(content, source, row);
    return;
  }
  RunCsv csv(content, source, "xtk-flow-records",
             "flow_id,dst,size_bytes,sched_start_ns,start_ns,end_ns,fct_us,lateness_us,status,error");
  auto fail = [&](std::string_view what) { csv.fail(what); };
  // -1 marks a start or end that never happened.
  auto optional_time = [&](std::size_t i, std::string_view name) -> std::optional<std::int64_t> {
    std::int64_t value = 0;
    if (!parse_i64(csv.field(i), value) || value < -1) {
      csv.fail(
          fmt::format("{} '{}' is not an integer of nanoseconds (or -1 when it never happened)", name, csv.field(i)));
    }
    return value >= 0 ? std::optional<std::int64_t>(value) : std::nullopt;
  };
  FlowRecord r;
  while (csv.next()) {
    r.flow_id = csv.unsigned_field(0, "flow_id");
    r.dst = csv.token_field(1, "dst");
    r.size_bytes = csv.unsigned_field(2, "size_bytes");
    r.sched_start_ns = csv.time_field(3, "sched_start_ns");
    r.start_ns = optional_time(4, "start_ns");
    r.end_ns = optional_time(5, "end_ns");
    r.fct_us = csv.number_field(6, "fct_us");
    r.lateness_us = csv.number_field(7, "lateness_us");
    const auto status = parse_status(csv.field(8));
    if (!status) csv.fail(fmt::format("status '{}' is not one of ok, failed, timeout, cancelled", csv.field(8)));
    r.status = *status;
    r.error = csv.field(9);
    check_flow(r, fail);
    row(r);
  }
}

void read_counters(std::string_view content, const std::string& source,
                   const std::function<void(const CounterSample&)>& row) {
  RunCsv csv(content, source, "xtk-counters", "t_ns,realtime_ns,source,name,value,slow");
  // A value may drop (a 32-bit counter wraps, a driver reloads): the reader
  // keeps it, the rates decide. Time must go forward.
  std::map<std::string, std::int64_t, std::less<>> last_t_ns;  // per "source/name"; counters are few
  std::string key;
  CounterSample s;
  while (csv.next()) {
    s.t_ns = csv.time_field(0, "t_ns");
    s.realtime_ns = csv.time_field(1, "realtime_ns");
    s.source = csv.token_field(2, "source");
    s.name = csv.token_field(3, "name");
    s.value = csv.unsigned_field(4, "value");
    const auto slow = csv.field(5);
    if (slow != "0" && slow != "1") csv.fail(fmt::format("slow '{}' is not 0 or 1", slow));
    s.slow = slow == "1";
    key.assign(s.source).append("/").append(s.name);
    const auto it = last_t_ns.find(key);
    if (it == last_t_ns.end()) {
      last_t_ns.emplace(key, s.t_ns);
    } else {
      if (s.t_ns <= it->second) {
        csv.fail(fmt::format("t_ns {} of {} is not after the previous sample's {}", s.t_ns, key, it->second));
      }
      it->second = s.t_ns;
    }
    row(s);
  }
}

TraceHeader read_trace_bins(std::string_view content, const std::string& source,
                            const std::function<void(const TraceHeader&, const TraceBin&)>& row) {
  RunCsv csv(content, source, "xtk-trace-bins", "bin_start_ns,flow,src,dst,bytes,packets");
  TraceHeader header;
  const auto bin = csv.header_value("bin_ns");
  if (!bin) csv.fail_header("bin_ns", "no '# bin_ns=N' line before the column line: the bin width is required");
  if (!parse_i64(*bin, header.bin_ns) || header.bin_ns <= 0) {
    csv.fail_header("bin_ns", fmt::format("bin_ns '{}' is not a positive integer", *bin));
  }
  TraceBin b;
  std::int64_t first = -1, previous = -1;
  while (csv.next()) {
    b.bin_start_ns = csv.time_field(0, "bin_start_ns");
    b.flow = csv.field(1);
    if (b.flow.empty()) csv.fail("flow is empty");
    b.src = csv.token_field(2, "src");
    b.dst = csv.token_field(3, "dst");
    b.bytes = csv.unsigned_field(4, "bytes");
    b.packets = csv.unsigned_field(5, "packets");
    if (b.bin_start_ns < previous) {
      csv.fail(fmt::format("bin_start_ns {} is before the previous row's {}: bins are sorted by time", b.bin_start_ns,
                           previous));
    }
    if (b.bin_start_ns > std::numeric_limits<std::int64_t>::max() - header.bin_ns) {
      csv.fail(fmt::format("bin_start_ns {} is too large: the bin would end past the largest time", b.bin_start_ns));
    }
    if (first < 0) first = b.bin_start_ns;
    if ((b.bin_start_ns - first) % header.bin_ns != 0) {
      csv.fail(fmt::format("bin_start_ns {} is not on the bin grid: the first bin starts at {}, bins are {} ns",
                           b.bin_start_ns, first, header.bin_ns));
    }
    previous = b.bin_start_ns;
    if (b.bytes > 0 && b.packets == 0) csv.fail(fmt::format("bytes {} in 0 packets", b.bytes));
    row(header, b);
  }
  return header;
}

}  // namespace xtk::analysis
