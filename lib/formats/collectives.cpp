#include "formats/collectives.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "core/error.hpp"

namespace xtk {
namespace {
constexpr std::string_view kColumns = "rank,iter,index,collective,bytes,arrive_ns,end_ns,group";
// Before sub-groups were replayed: every call was the whole job's.
constexpr std::string_view kColumnsWithoutGroup = "rank,iter,index,collective,bytes,arrive_ns,end_ns";

std::vector<std::uint64_t> parse_group(const RunCsv& csv, std::string_view text, std::uint64_t ranks) {
  std::vector<std::uint64_t> group;
  if (text == "all") return group;
  std::uint64_t at = 0;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t dot = std::min(text.find('.', start), text.size());
    const std::string_view part = text.substr(start, dot - start);
    if (!parse_u64(part, at)) {
      csv.fail(fmt::format("group '{}' is not \"all\" or ranks joined by dots (0.1)", text));
    }
    if (!group.empty() && at <= group.back()) csv.fail(fmt::format("group '{}': its ranks must increase", text));
    if (ranks > 0 && at >= ranks) {
      csv.fail(fmt::format("group '{}': rank {} is not below the job's {} ranks", text, at, ranks));
    }
    group.push_back(at);
    start = dot + 1;
  }
  return group;
}

}  // namespace

CollectiveWriter::CollectiveWriter(const std::string& path,
                                   const std::vector<std::pair<std::string, std::string>>& header)
    : out_(path, "the collectives file", "xtk-collectives", header, kColumns) {}

void CollectiveWriter::write(const CollectiveRecord& r) {
  out_.row("{},{},{},{},{},{},{},{}\n", r.rank, r.iter, r.index, r.collective, r.bytes, r.arrive_ns, r.end_ns,
           r.group.empty() ? std::string("all") : fmt::format("{}", fmt::join(r.group, ".")));
}

void read_collectives(std::string_view content, const std::string& source, std::uint64_t ranks,
                      const std::function<void(const CollectiveRecord&)>& row) {
  RunCsv csv(content, source, "xtk-collectives", kColumns, kColumnsWithoutGroup);
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> last;  // per rank: (iter, index)
  CollectiveRecord r;
  while (csv.next()) {
    r.rank = csv.unsigned_field(0, "rank");
    r.iter = csv.unsigned_field(1, "iter");
    r.index = csv.unsigned_field(2, "index");
    r.collective = csv.token_field(3, "collective");
    r.bytes = csv.unsigned_field(4, "bytes");
    r.arrive_ns = csv.time_field(5, "arrive_ns");
    r.end_ns = csv.time_field(6, "end_ns");
    if (ranks > 0 && r.rank >= ranks) {
      csv.fail(fmt::format("rank {} is not below the job's {} ranks (\"ranks\" in run.json)", r.rank, ranks));
    }
    if (r.end_ns < r.arrive_ns) csv.fail(fmt::format("end_ns {} is before arrive_ns {}", r.end_ns, r.arrive_ns));
    r.group.clear();
    if (csv.column_count() > 7) {
      r.group = parse_group(csv, csv.token_field(7, "group"), ranks);
      if (!r.group.empty() && std::find(r.group.begin(), r.group.end(), r.rank) == r.group.end()) {
        csv.fail(fmt::format("rank {} is not in its call's group {}", r.rank, csv.field(7)));
      }
    }
    const std::pair<std::uint64_t, std::uint64_t> at{r.iter, r.index};
    const auto [it, first] = last.try_emplace(r.rank, at);
    if (!first) {
      if (at <= it->second) {
        csv.fail(
            fmt::format("iter {} index {} of rank {} comes after iter {} index {}: a rank's calls must be in "
                        "increasing order",
                        r.iter, r.index, r.rank, it->second.first, it->second.second));
      }
      it->second = at;
    }
    row(r);
  }
}

}  // namespace xtk
