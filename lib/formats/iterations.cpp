#include "formats/iterations.hpp"

#include <fmt/format.h>

#include <iterator>
#include <map>
#include <string>

#include "core/error.hpp"

namespace xtk {

namespace {
constexpr std::string_view kColumns =
    "rank,iter,start_ns,end_ns,iter_us,comm_us,bytes,tcp_retransmits,tcp_timeouts,tcp_rwnd_limited_us";
constexpr std::string_view kColumnsWithoutTcp = "rank,iter,start_ns,end_ns,iter_us,comm_us,bytes";

std::string count_text(const std::optional<std::uint64_t>& count) { return count ? std::to_string(*count) : ""; }

std::optional<std::uint64_t> count_field(const RunCsv& csv, std::size_t i, std::string_view name) {
  if (csv.field(i).empty()) return std::nullopt;
  return csv.unsigned_field(i, name);
}
}  // namespace

IterationWriter::IterationWriter(const std::string& path,
                                 const std::vector<std::pair<std::string, std::string>>& header)
    : out_(path, "the iterations file", "xtk-iterations", header, kColumns) {}

void IterationWriter::write(const IterationRecord& r) {
  out_.row("{},{},{},{},{:.3f},{:.3f},{},{},{},{}\n", r.rank, r.iter, r.start_ns, r.end_ns, r.iter_us, r.comm_us,
           r.bytes, count_text(r.tcp_retransmits), count_text(r.tcp_timeouts), count_text(r.tcp_rwnd_limited_us));
}

void read_iterations(std::string_view content, const std::string& source, std::uint64_t ranks,
                     const std::function<void(const IterationRecord&)>& row) {
  RunCsv csv(content, source, "xtk-iterations", kColumns, kColumnsWithoutTcp);
  std::map<std::uint64_t, std::uint64_t> last_iter;  // per rank; ranks are few
  IterationRecord r;
  while (csv.next()) {
    r.rank = csv.unsigned_field(0, "rank");
    r.iter = csv.unsigned_field(1, "iter");
    r.start_ns = csv.time_field(2, "start_ns");
    r.end_ns = csv.time_field(3, "end_ns");
    r.iter_us = csv.number_field(4, "iter_us");
    r.comm_us = csv.number_field(5, "comm_us");
    r.bytes = csv.unsigned_field(6, "bytes");
    r.tcp_retransmits = r.tcp_timeouts = r.tcp_rwnd_limited_us = std::nullopt;
    if (csv.column_count() > 7) {
      r.tcp_retransmits = count_field(csv, 7, "tcp_retransmits");
      r.tcp_timeouts = count_field(csv, 8, "tcp_timeouts");
      r.tcp_rwnd_limited_us = count_field(csv, 9, "tcp_rwnd_limited_us");
    }
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

}  // namespace xtk
