#include "analysis/stragglers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "formats/collectives.hpp"
#include "formats/csv_file.hpp"

namespace xtk::analysis {
namespace {

struct Arrival {
  std::uint64_t rank;
  std::int64_t arrive_ns, end_ns;
};

}  // namespace

Stragglers read_stragglers(const std::vector<std::string>& paths, std::uint64_t ranks, std::uint64_t warmup) {
  // A call is the n-th of its group (the whole job, a sub-group, a send's
  // pair) in its iteration on every rank of the group: (iter, group, n) ->
  // every member's arrival. A job's calls are thousands, not millions.
  using Group = std::vector<std::uint64_t>;  // empty: the whole job
  std::map<std::tuple<std::uint64_t, Group, std::uint64_t>, std::vector<Arrival>> calls;
  std::map<std::tuple<std::uint64_t, std::uint64_t, Group>, std::uint64_t> seen;  // (rank, iter, group) -> calls
  std::map<std::uint64_t, std::size_t> file_of_rank;
  for (std::size_t f = 0; f < paths.size(); ++f) {
    const std::string text = read_text_file(paths[f], "collectives file");
    read_collectives(text, paths[f], ranks, [&](const CollectiveRecord& r) {
      const auto [it, first] = file_of_rank.try_emplace(r.rank, f);
      if (!first && it->second != f) {
        throw InputError(
            paths[f], 0,
            fmt::format("rank {} is also in {}: each rank's calls are in one file", r.rank, paths[it->second]));
      }
      if (r.iter < warmup) return;
      const std::uint64_t n = seen[{r.rank, r.iter, r.group}]++;
      calls[{r.iter, r.group, n}].push_back(Arrival{r.rank, r.arrive_ns, r.end_ns});
    });
  }
  const std::uint64_t job_ranks = ranks > 0 ? ranks : file_of_rank.size();
  if (paths.empty()) throw UsageError("no collectives file given");
  if (job_ranks < 2) throw InputError(paths.front(), 0, "stragglers need the calls of at least 2 ranks");

  Stragglers s;
  std::map<std::uint64_t, StragglerRank> by_rank;
  for (std::uint64_t r = 0; r < job_ranks; ++r) by_rank[r].rank = r;
  std::vector<double> spread, transfer;
  // Per iteration: the spread of its call that ended last, and that end.
  std::map<std::uint64_t, std::pair<std::int64_t, std::int64_t>> final_call;
  for (auto& [key, arrivals] : calls) {
    const auto& group = std::get<1>(key);
    const std::size_t members = group.empty() ? job_ranks : group.size();
    // A rank did not record it (the run stopped), or a group of one waits for nobody.
    if (arrivals.size() != members || members < 2) continue;
    std::sort(arrivals.begin(), arrivals.end(), [](const Arrival& a, const Arrival& b) {
      return a.arrive_ns != b.arrive_ns ? a.arrive_ns < b.arrive_ns : a.rank < b.rank;
    });
    const Arrival& last = arrivals.back();
    const Arrival& next_latest = arrivals[arrivals.size() - 2];
    std::int64_t end = 0;
    for (const auto& a : arrivals) {
      end = std::max(end, a.end_ns);
      auto& r = by_rank[a.rank];
      ++r.calls;
      r.wait_us += static_cast<double>(last.arrive_ns - a.arrive_ns) / 1e3;
    }
    auto& straggler = by_rank[last.rank];
    ++straggler.last;
    straggler.last_by_us += static_cast<double>(last.arrive_ns - next_latest.arrive_ns) / 1e3;
    ++s.calls;
    const std::int64_t spread_ns = last.arrive_ns - arrivals.front().arrive_ns;
    spread.push_back(static_cast<double>(spread_ns) / 1e3);
    transfer.push_back(static_cast<double>(std::max<std::int64_t>(0, end - last.arrive_ns)) / 1e3);
    const auto [it, first] = final_call.try_emplace(std::get<0>(key), spread_ns, end);
    if (!first && end >= it->second.second) it->second = {spread_ns, end};
  }
  if (s.calls == 0) return s;
  for (auto& [rank, r] : by_rank) {
    if (r.last > 0) r.last_by_us /= static_cast<double>(r.last);
    if (r.calls > 0) r.wait_us /= static_cast<double>(r.calls);
    s.ranks.push_back(r);
  }
  std::sort(spread.begin(), spread.end());
  std::sort(transfer.begin(), transfer.end());
  s.spread_p50_us = percentile_sorted(spread, 0.50);
  s.spread_p99_us = percentile_sorted(spread, 0.99);
  s.transfer_p50_us = percentile_sorted(transfer, 0.50);
  s.iterations = final_call.size();
  double lost = 0;
  std::uint64_t counted = 0;
  for (auto it = final_call.begin(); it != final_call.end(); ++it) {
    if (it == final_call.begin() || std::prev(it)->first + 1 != it->first) continue;
    const std::int64_t span = it->second.second - std::prev(it)->second.second;
    if (span <= 0) continue;
    lost += static_cast<double>(it->second.first) / static_cast<double>(span);
    ++counted;
  }
  s.lost_share = counted > 0 ? lost / static_cast<double>(counted) : std::numeric_limits<double>::quiet_NaN();
  return s;
}

std::vector<Column> straggler_columns(std::vector<Column> leading) {
  for (Column c : std::vector<Column>{{"rank"},
                                      {"calls"},
                                      {"last_calls"},
                                      {"last_share", 3},
                                      {"last_by_us", 1},
                                      {"wait_us", 1},
                                      {"spread_p50_us", 1},
                                      {"spread_p99_us", 1},
                                      {"transfer_p50_us", 1},
                                      {"lost_share", 3}}) {
    leading.push_back(std::move(c));
  }
  return leading;
}

void add_straggler_rows(Table& table, const std::vector<Cell>& leading, const Stragglers& s) {
  for (const auto& r : s.ranks) {
    std::vector<Cell> row = leading;
    const double share = r.calls > 0 ? static_cast<double>(r.last) / static_cast<double>(r.calls) : 0.0;
    for (Cell c : std::vector<Cell>{r.rank, r.calls, r.last, share, r.last_by_us, r.wait_us, s.spread_p50_us,
                                    s.spread_p99_us, s.transfer_p50_us, s.lost_share}) {
      row.push_back(std::move(c));
    }
    table.add_row(std::move(row));
  }
}

}  // namespace xtk::analysis
