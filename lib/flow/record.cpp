#include "flow/record.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

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

double FlowRecord::fct_us() const {
  return status == FlowStatus::ok ? static_cast<double>(end_ns - start_ns) / 1e3 : 0.0;
}

double FlowRecord::lateness_us() const {
  return start_ns >= 0 ? static_cast<double>(start_ns - sched_start_ns) / 1e3 : 0.0;
}

namespace {
constexpr const char* kColumns =
    "flow_id,dst,size_bytes,sched_start_ns,start_ns,end_ns,fct_us,lateness_us,status,error";

// Appends a CSV field: quoted when it holds a comma, quote or newline.
void append_csv_field(std::string& out, const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) {
    out += text;
    return;
  }
  out += '"';
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' || c == '\r' ? ' ' : c);
  out += '"';
}

// Appends an integer in decimal. A record is written per flow: this avoids
// parsing a format string and growing the text through an iterator.
template <typename Integer>
void append_int(std::string& out, Integer value) {
  const fmt::format_int text(value);
  out.append(text.data(), text.size());
}

// Appends ns as microseconds with three decimals ("-1.250"): what {:.3f} of
// ns / 1e3 prints, without floating point.
void append_us(std::string& out, std::int64_t ns) {
  const std::uint64_t magnitude = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  if (ns < 0) out += '-';
  append_int(out, magnitude / 1000);
  const auto thousandths = static_cast<unsigned>(magnitude % 1000);
  const char digits[4] = {'.', static_cast<char>('0' + thousandths / 100),
                          static_cast<char>('0' + thousandths / 10 % 10), static_cast<char>('0' + thousandths % 10)};
  out.append(digits, sizeof digits);
}
}  // namespace

RecordWriter::RecordWriter(const std::string& path) : path_(path == "-" ? "<stdout>" : path) {
  const auto ends_with = [&](std::string_view suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".jsonl") || ends_with(".json")) format_ = Format::jsonl;
  if (path == "-") {
    file_ = stdout;
  } else {
    file_ = std::fopen(path.c_str(), "wb");
    if (file_ == nullptr) throw Error(fmt::format("{}: cannot create flow records: {}", path, std::strerror(errno)));
    owns_ = true;
  }
  if (format_ == Format::csv) {
    buffer_ = fmt::format("# xtk-flow-records\n# format_version=1\n{}\n", kColumns);
    flush();
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
    append_int(buffer_, r.flow_id);
    buffer_ += ',';
    append_csv_field(buffer_, r.dst);
    buffer_ += ',';
    append_int(buffer_, r.size_bytes);
    for (const std::int64_t ns : {r.sched_start_ns, r.start_ns, r.end_ns}) {
      buffer_ += ',';
      append_int(buffer_, ns);
    }
    buffer_ += ',';
    append_us(buffer_, r.status == FlowStatus::ok ? r.end_ns - r.start_ns : 0);
    buffer_ += ',';
    append_us(buffer_, r.start_ns >= 0 ? r.start_ns - r.sched_start_ns : 0);
    buffer_ += ',';
    buffer_ += status_name(r.status);
    buffer_ += ',';
    append_csv_field(buffer_, r.error);
    buffer_ += '\n';
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
    buffer_ += j.dump();
    buffer_ += '\n';
  }
  ++written_;
  if (buffer_.size() > (1U << 16)) flush();
}

void RecordWriter::flush() {
  if (file_ == nullptr || buffer_.empty()) return;
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size() || std::fflush(file_) != 0) {
    throw Error(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
  }
  buffer_.clear();
}

void RecordWriter::flush_if_due(std::int64_t now_ns, std::int64_t interval_ns) {
  if (now_ns - last_flush_ns_ >= interval_ns) {
    flush();
    last_flush_ns_ = now_ns;
  }
}

void RecordWriter::close() {
  if (file_ == nullptr) return;
  flush();
  if (owns_) std::fclose(file_);
  file_ = nullptr;
}

}  // namespace xtk
