#include "formats/flow_records.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "core/report.hpp"
#include "formats/csv_file.hpp"
#include "formats/text_output.hpp"

namespace xtk {

std::string_view status_name(FlowStatus status) {
  switch (status) {
    case FlowStatus::ok:
      return "ok";
    case FlowStatus::failed:
      return "failed";
    case FlowStatus::timeout:
      return "timeout";
    case FlowStatus::cancelled:
      return "cancelled";
  }
  return "?";
}

std::optional<FlowStatus> parse_flow_status(std::string_view name) {
  for (auto s : {FlowStatus::ok, FlowStatus::failed, FlowStatus::timeout, FlowStatus::cancelled}) {
    if (status_name(s) == name) return s;
  }
  return std::nullopt;
}

double FlowRecord::fct_us() const {
  return status == FlowStatus::ok ? static_cast<double>(end_ns - start_ns) / 1e3 : 0.0;
}

double FlowRecord::lateness_us() const {
  return start_ns >= 0 ? static_cast<double>(start_ns - sched_start_ns) / 1e3 : 0.0;
}

namespace {
constexpr std::string_view kColumns =
    "flow_id,dst,size_bytes,sched_start_ns,start_ns,end_ns,fct_us,lateness_us,status,error";

// A row is written in place in the output's buffer: a record is written per
// flow, and appending to a std::string piece by piece cost a quarter more
// instructions (1,223 against 960 a row).
// Puts ns as microseconds with three decimals ("-1.250"): what {:.3f} of
// ns / 1e3 prints, without floating point.
char* put_us(char* at, std::int64_t ns) {
  const std::uint64_t magnitude = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  if (ns < 0) *at++ = '-';
  at = put_int(at, magnitude / 1000);
  const auto thousandths = static_cast<unsigned>(magnitude % 1000);
  *at++ = '.';
  *at++ = static_cast<char>('0' + thousandths / 100);
  *at++ = static_cast<char>('0' + thousandths / 10 % 10);
  *at++ = static_cast<char>('0' + thousandths % 10);
  return at;
}

// The numbers of a row after dst, each after its comma: four integers and two
// microsecond values of at most one character more ("-9223372036854775.808");
// then the comma before status.
constexpr std::size_t kRowNumbersMax = 4 * (kIntRoom + 1) + 2 * (kIntRoom + 2) + 1;
// A row but for its dst and error: flow_id and its comma, the numbers, the
// longest status, the comma before error and the line's end.
constexpr std::size_t kRowFixedMax = kIntRoom + 1 + kRowNumbersMax + 9 + 1 + 1;

// Writes the CSV row of `r` at `at`, which has room for csv_row_room(r).
char* put_csv_row(char* at, const FlowRecord& r) {
  at = put_int(at, r.flow_id);
  *at++ = ',';
  at = put_csv_field(at, r.dst);
  *at++ = ',';
  at = put_int(at, r.size_bytes);
  for (const std::int64_t value : {r.sched_start_ns, r.start_ns, r.end_ns}) {
    *at++ = ',';
    at = put_int(at, value);
  }
  *at++ = ',';
  at = put_us(at, r.status == FlowStatus::ok ? r.end_ns - r.start_ns : 0);
  *at++ = ',';
  at = put_us(at, r.start_ns >= 0 ? r.start_ns - r.sched_start_ns : 0);
  *at++ = ',';
  const std::string_view status = status_name(r.status);
  std::memcpy(at, status.data(), status.size());
  at += status.size();
  *at++ = ',';
  at = put_csv_field(at, r.error);
  *at++ = '\n';
  return at;
}

std::size_t csv_row_room(const FlowRecord& r) {
  return kRowFixedMax + csv_field_room(r.dst.size()) + csv_field_room(r.error.size());
}
}  // namespace

RecordWriter::RecordWriter(const std::string& path) : out_(path, "flow records") {
  const auto ends_with = [&](std::string_view suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".jsonl") || ends_with(".json")) format_ = Format::jsonl;
  if (format_ == Format::csv) {
    out_.print("# xtk-flow-records\n# format_version=1\n{}\n", kColumns);
    out_.flush();
  }
}

RecordWriter::~RecordWriter() {
  try {
    close();
  } catch (const Error& e) {
    std::fprintf(stderr, "xtk: %s\n", e.what());
  }
}

void RecordWriter::write(const FlowRecord& r) {
  if (format_ == Format::csv) {
    // Formatted in place in the output's buffer: a record is written per flow.
    const std::size_t room = csv_row_room(r);
    if (room <= out_.capacity()) {
      out_.commit(put_csv_row(out_.reserve(room), r));
    } else {  // a row longer than the buffer (an error text of megabytes)
      std::string row(room, '\0');
      row.resize(static_cast<std::size_t>(put_csv_row(row.data(), r) - row.data()));
      out_.write(row);
    }
  } else {
    nlohmann::json j{{"flow_id", r.flow_id},
                     {"dst", r.dst},
                     {"size_bytes", r.size_bytes},
                     {"sched_start_ns", r.sched_start_ns},
                     {"start_ns", r.start_ns},
                     {"end_ns", r.end_ns},
                     {"fct_us", r.fct_us()},
                     {"lateness_us", r.lateness_us()},
                     {"status", status_name(r.status)},
                     {"error", r.error}};
    out_.write(j.dump() + '\n');
  }
  ++written_;
}

void RecordWriter::flush_if_due(std::int64_t now_ns, std::int64_t interval_ns) {
  if (now_ns - last_flush_ns_ >= interval_ns) {
    out_.flush();
    last_flush_ns_ = now_ns;
  }
}

void RecordWriter::close() { out_.close(); }

namespace {

// Checks shared by the CSV and JSON Lines forms; `fail` names the line.
// `fct_us` as the file gives it (the record derives its own from the times).
template <typename Fail>
void check_flow(const FlowRecord& r, double fct_us, const Fail& fail) {
  if (r.size_bytes == 0) fail("size_bytes '0' is not a positive integer");
  if (r.status == FlowStatus::ok) {
    if (r.start_ns < 0 || r.end_ns < 0) fail("status ok without a start_ns and end_ns");
    if (!r.error.empty()) fail(fmt::format("status ok with error '{}': ok flows have no error", r.error));
  }
  if (r.start_ns >= 0 && r.end_ns >= 0 && r.end_ns < r.start_ns) {
    fail(fmt::format("end_ns {} is before start_ns {}", r.end_ns, r.start_ns));
  }
  if (r.end_ns >= 0 && r.start_ns < 0) fail(fmt::format("end_ns {} without a start_ns", r.end_ns));
  if (fct_us < 0) fail(fmt::format("fct_us {} is negative", fct_us));
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
    r.dst = std::string(text("dst"));
    if (!valid_token(r.dst)) fail(fmt::format("dst '{}' is empty or has spaces or '#'", r.dst));
    r.size_bytes = whole("size_bytes");
    r.sched_start_ns = time("sched_start_ns", 0);
    r.start_ns = time("start_ns", -1);
    r.end_ns = time("end_ns", -1);
    const double fct_us = number("fct_us");
    number("lateness_us");
    const auto status = parse_flow_status(text("status"));
    if (!status) fail(fmt::format("status '{}' is not one of ok, failed, timeout, cancelled", text("status")));
    r.status = *status;
    r.error = text("error");
    check_flow(r, fct_us, fail);
    row(r);
  }
}

}  // namespace

void read_flow_records(std::string_view content, const std::string& source,
                       const std::function<void(const FlowRecord&)>& row) {
  const auto first = content.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && content[first] == '{') {
    read_flows_jsonl(content, source, row);
    return;
  }
  RunCsv csv(content, source, "xtk-flow-records", kColumns);
  auto fail = [&](std::string_view what) { csv.fail(what); };
  // -1 marks a start or end that never happened.
  auto optional_time = [&](std::size_t i, std::string_view name) {
    std::int64_t value = 0;
    if (!parse_i64(csv.field(i), value) || value < -1) {
      csv.fail(
          fmt::format("{} '{}' is not an integer of nanoseconds (or -1 when it never happened)", name, csv.field(i)));
    }
    return value;
  };
  FlowRecord r;
  while (csv.next()) {
    r.flow_id = csv.unsigned_field(0, "flow_id");
    r.dst = std::string(csv.token_field(1, "dst"));
    r.size_bytes = csv.unsigned_field(2, "size_bytes");
    r.sched_start_ns = csv.time_field(3, "sched_start_ns");
    r.start_ns = optional_time(4, "start_ns");
    r.end_ns = optional_time(5, "end_ns");
    const double fct_us = csv.number_field(6, "fct_us");
    csv.number_field(7, "lateness_us");
    const auto status = parse_flow_status(csv.field(8));
    if (!status) csv.fail(fmt::format("status '{}' is not one of ok, failed, timeout, cancelled", csv.field(8)));
    r.status = *status;
    r.error = std::string(csv.field(9));
    check_flow(r, fct_us, fail);
    row(r);
  }
}

}  // namespace xtk
