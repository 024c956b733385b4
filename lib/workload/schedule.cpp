#include "workload/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <iostream>

#include "core/error.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "formats/csv_file.hpp"

namespace xtk {
namespace {

constexpr std::string_view kMagic = "# xtk-schedule";
constexpr std::size_t kBufferBytes = 64 << 10;  // stays in L2 between formatting and write()

template <typename T>
bool parse_int(std::string_view text, T& value) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && ptr == text.data() + text.size() && !text.empty();
}

}  // namespace

void ScheduleHeader::set(std::string key, std::string value) {
  for (auto& [k, v] : params) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  params.emplace_back(std::move(key), std::move(value));
}

std::optional<std::string> ScheduleHeader::get(std::string_view key) const {
  for (const auto& [k, v] : params) {
    if (k == key) return v;
  }
  return std::nullopt;
}

ScheduleWriter::ScheduleWriter(const std::string& path, const ScheduleHeader& header)
    : out_(path, "schedule", kBufferBytes),
      has_dscp_(header.has_dscp),
      has_rate_(header.has_rate),
      has_cc_(header.has_cc) {
  out_.print("{}\n# format_version={}\n", kMagic, kScheduleFormatVersion);
  for (const auto& [key, value] : header.params) out_.print("# {}={}\n", key, value);
  out_.write("flow_id,start_ns,src,dst,size_bytes");
  if (has_dscp_) out_.write(",dscp");
  if (has_rate_) out_.write(",rate_bps");
  if (has_cc_) out_.write(",cc");
  out_.write("\n");
}

ScheduleWriter::~ScheduleWriter() {
  try {
    close();
  } catch (const Error&) {
    // A destructor cannot report; callers that care call close() themselves.
  }
}

char* ScheduleWriter::put_line(char* at, const Flow& flow) const {
  const auto text = [&](std::string_view s) {
    std::memcpy(at, s.data(), s.size());
    at += s.size();
  };
  at = put_int(at, flow.id);
  *at++ = ',';
  at = put_int(at, flow.start_ns);
  *at++ = ',';
  text(flow.src);
  *at++ = ',';
  text(flow.dst);
  *at++ = ',';
  at = put_int(at, flow.size_bytes);
  if (has_dscp_) {
    *at++ = ',';
    at = put_int(at, flow.dscp);
  }
  if (has_rate_) {
    *at++ = ',';
    at = put_int(at, flow.rate_bps);
  }
  if (has_cc_) {
    *at++ = ',';
    text(flow.cc);
  }
  *at++ = '\n';
  return at;
}

void ScheduleWriter::write(const Flow& flow) {
  // Five integers and the three texts, each with its comma or the newline.
  const std::size_t room = 8 * (kIntRoom + 1) + flow.src.size() + flow.dst.size() + flow.cc.size();
  if (room <= out_.capacity()) {
    out_.commit(put_line(out_.reserve(room), flow));
  } else {  // host names longer than the buffer
    std::string line(room, '\0');
    line.resize(static_cast<std::size_t>(put_line(line.data(), flow) - line.data()));
    out_.write(line);
  }
  ++flows_;
}

void ScheduleWriter::close() { out_.close(); }

ScheduleReader::ScheduleReader(std::istream& in, std::string source) : source_(std::move(source)), lines_(in, source_) {
  bool magic = false, versioned = false;
  std::string_view line;
  while (lines_.next(line)) {
    if (lines_.line() == 1) {
      if (without_byte_order_mark(line) != kMagic)
        fail(fmt::format("not an xtk schedule: the first line must be '{}'", kMagic));
      magic = true;
      continue;
    }
    if (line.empty()) continue;
    if (line.front() == '#') {
      line.remove_prefix(1);
      while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      const auto eq = line.find('=');
      if (eq == std::string_view::npos || eq == 0) continue;  // free-form comment
      std::string key(line.substr(0, eq));
      std::string value(line.substr(eq + 1));
      if (key == "format_version") {
        int version = 0;
        if (!parse_int(value, version)) fail(fmt::format("format_version '{}' is not a number", value));
        if (version != kScheduleFormatVersion) {
          fail(fmt::format("format_version {} is not supported (this xtk reads version {})", version,
                           kScheduleFormatVersion));
        }
        versioned = true;
        continue;
      }
      // The keys readers compute with: a bad value would make a load or a duration out of nothing.
      if (key == "duration_ns" || key == "burst_width_ns" || key == "burst_period_ns" || key == "link_bps" ||
          key == "load_bps_per_src") {
        std::int64_t number = 0;
        const bool zero_is_fine = key == "load_bps_per_src";
        if (!parse_int(value, number) || number < (zero_is_fine ? 0 : 1)) {
          fail(fmt::format("header {} '{}' is not a {} integer", key, value,
                           zero_is_fine ? "non-negative" : "positive"));
        }
      }
      header_.set(std::move(key), std::move(value));
      continue;
    }
    // The column line ends the header.
    if (!versioned) fail("no '# format_version=N' line before the column line");
    static constexpr std::string_view kRequired = "flow_id,start_ns,src,dst,size_bytes";
    if (line.substr(0, kRequired.size()) != kRequired) {
      fail(fmt::format("expected the column line '{}[,dscp][,rate_bps][,cc]'", kRequired));
    }
    std::string_view rest = line.substr(kRequired.size());
    while (!rest.empty()) {
      if (rest.front() != ',') fail("malformed column line");
      rest.remove_prefix(1);
      const auto comma = rest.find(',');
      const std::string_view name = rest.substr(0, comma);
      if (name == "dscp" && dscp_column_ < 0) {
        dscp_column_ = static_cast<int>(columns_++);
        header_.has_dscp = true;
      } else if (name == "rate_bps" && rate_column_ < 0) {
        rate_column_ = static_cast<int>(columns_++);
        header_.has_rate = true;
      } else if (name == "cc" && cc_column_ < 0) {
        cc_column_ = static_cast<int>(columns_++);
        header_.has_cc = true;
      } else {
        fail(fmt::format("unknown or repeated column '{}' (optional columns: dscp, rate_bps, cc)", name));
      }
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma);
    }
    return;
  }
  if (!magic) fail("empty file: not an xtk schedule");
  fail("no column line: the header must end with 'flow_id,start_ns,src,dst,size_bytes'");
}

std::unique_ptr<ScheduleReader> ScheduleReader::open(const std::string& path) {
  if (path == "-") return std::make_unique<ScheduleReader>(std::cin, "<stdin>");
  auto file = std::make_unique<std::ifstream>(path, std::ios::binary);
  if (!*file) throw Error(fmt::format("{}: cannot open schedule: {}", path, std::strerror(errno)));
  auto reader = std::make_unique<ScheduleReader>(*file, path);
  reader->owned_ = std::move(file);
  return reader;
}

void ScheduleReader::fail(std::string_view what) const { throw InputError(source_, line(), what); }

bool ScheduleReader::next(Flow& flow) {
  std::string_view line;
  while (lines_.next(line)) {
    if (line.empty() || line.front() == '#') continue;
    std::string_view fields[8];
    std::size_t count = 0;
    while (true) {
      const auto comma = line.find(',');
      if (count == columns_) fail(fmt::format("more than {} fields", columns_));
      fields[count++] = line.substr(0, comma);
      if (comma == std::string_view::npos) break;
      line.remove_prefix(comma + 1);
    }
    if (count != columns_) fail(fmt::format("{} fields, expected {}", count, columns_));
    if (!parse_int(fields[0], flow.id)) fail(fmt::format("flow_id '{}' is not a non-negative integer", fields[0]));
    // Increasing ids make a repeated id an error found in constant memory.
    if (have_id_ && flow.id <= last_id_) {
      fail(fmt::format("flow_id {} is not above the previous flow's {}: flow ids are unique and increase down the file",
                       flow.id, last_id_));
    }
    have_id_ = true;
    last_id_ = flow.id;
    if (!parse_int(fields[1], flow.start_ns) || flow.start_ns < 0) {
      fail(fmt::format("start_ns '{}' is not a non-negative integer", fields[1]));
    }
    if (flow.start_ns < last_start_) {
      fail(fmt::format("start_ns {} is before the previous flow's {}: schedules are sorted by start", flow.start_ns,
                       last_start_));
    }
    last_start_ = flow.start_ns;
    // Most rows name the hosts of the row before: checked once (what is kept is never empty).
    if (fields[2].empty() || fields[2] != last_src_) {
      if (!valid_token(fields[2])) fail(fmt::format("src '{}' is empty or has spaces", fields[2]));
      last_src_ = fields[2];
    }
    if (fields[3].empty() || fields[3] != last_dst_) {
      if (!valid_token(fields[3])) fail(fmt::format("dst '{}' is empty or has spaces", fields[3]));
      last_dst_ = fields[3];
    }
    flow.src = fields[2];
    flow.dst = fields[3];
    if (!parse_int(fields[4], flow.size_bytes) || flow.size_bytes == 0) {
      fail(fmt::format("size_bytes '{}' is not a positive integer", fields[4]));
    }
    flow.dscp = 0;
    flow.rate_bps = 0;
    flow.cc = {};
    if (dscp_column_ >= 0) {
      const auto& f = fields[dscp_column_];
      if (!parse_int(f, flow.dscp) || flow.dscp < 0 || flow.dscp > 63) {
        fail(fmt::format("dscp '{}' is not an integer in 0-63", f));
      }
    }
    if (rate_column_ >= 0) {
      const auto& f = fields[rate_column_];
      if (!parse_int(f, flow.rate_bps)) fail(fmt::format("rate_bps '{}' is not a non-negative integer", f));
    }
    if (cc_column_ >= 0) {
      const auto& f = fields[cc_column_];
      if (!valid_congestion_control(f)) {
        fail(fmt::format("cc '{}' is not a congestion control name ({})", f, kCongestionControlNameRule));
      }
      flow.cc = f;
    }
    return true;
  }
  return false;
}

}  // namespace xtk
