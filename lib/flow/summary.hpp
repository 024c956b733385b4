// The client's end-of-run summary, built from flow records as they stream by
// (constant memory): load, goodput, statuses, FCT and slowdown by size bin,
// lateness and drift.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <ostream>
#include <string>

#include "core/stats.hpp"
#include "flow/late_starts.hpp"
#include "formats/flow_records.hpp"

namespace xtk {

struct SummaryInputs {
  double requested_bps = 0;      // from the schedule header (0 = unknown)
  double link_bps = 0;           // for the ideal FCT (0 = no slowdown)
  std::int64_t duration_ns = 0;  // the schedule's duration (drift deciles, offered load)
};

class ClientSummary {
 public:
  explicit ClientSummary(SummaryInputs inputs);
  void add(const FlowRecord& record);
  // Wall time from the run start to the last flow's end.
  void set_elapsed_ns(std::int64_t ns) { elapsed_ns_ = ns; }
  // Pool: flows that found no idle connection at their start and waited for one.
  void set_connection_waits(std::uint64_t flows) { connection_waits_ = flows; }
  // Pool: the widest its look-ahead became (--pool-ahead, or twice what slow
  // handshakes took), and whether that hit the ceiling.
  void set_pool_ahead(std::int64_t widest_ns, bool at_ceiling) {
    pool_ahead_ns_ = widest_ns;
    pool_ahead_at_ceiling_ = at_ceiling;
  }
  // The workers' causes of the starts later than 100 us.
  void set_late_starts(const LateStarts& late) { late_starts_ = late; }
  const LateStarts& late_starts() const { return late_starts_; }

  std::uint64_t flows() const { return flows_; }
  std::uint64_t flows_with(FlowStatus status) const { return by_status_[static_cast<std::size_t>(status)]; }
  double offered_bps() const;  // bytes started x 8 / schedule duration
  double goodput_bps() const;  // bytes of ok flows x 8 / elapsed
  double goodput_bps_at(std::int64_t elapsed_ns) const;
  const LogHistogram& lateness_ns() const { return lateness_ns_; }
  // Started flows whose lateness exceeded 100 us and 1 ms: the tail a
  // quantile hides (exact counts, not from the histogram's buckets).
  std::uint64_t flows_late_over_100us() const { return late_over_100us_; }
  std::uint64_t flows_late_over_1ms() const { return late_over_1ms_; }
  // Lateness (ns) p50 of the flows scheduled in the first and in the last 10 % of the duration.
  double early_lateness_p50_ns() const { return early_.quantile(0.5); }
  double late_lateness_p50_ns() const { return late_.quantile(0.5); }

  void print(std::ostream& out) const;
  nlohmann::json to_json() const;

  static constexpr std::array<const char*, 4> kBinNames{"<=100KB", "100KB-1MB", "1MB-10MB", ">10MB"};

 private:
  struct Bin {
    std::uint64_t flows = 0;
    LogHistogram fct_ns;
    LogHistogram slowdown_milli;  // slowdown x 1000
  };
  static std::size_t bin_of(std::uint64_t size);

  SummaryInputs in_;
  std::uint64_t flows_ = 0, bytes_started_ = 0, bytes_ok_ = 0;
  std::array<std::uint64_t, 4> by_status_{};
  std::int64_t elapsed_ns_ = 0;
  std::uint64_t connection_waits_ = 0;
  std::int64_t pool_ahead_ns_ = -1;  // -1: no pool (per-flow connections)
  bool pool_ahead_at_ceiling_ = false;
  LateStarts late_starts_;
  std::uint64_t late_over_100us_ = 0, late_over_1ms_ = 0;
  LogHistogram fct_ns_, lateness_ns_, early_, late_;
  std::array<Bin, 4> bins_;
  std::string first_error_;
  std::uint64_t errors_ = 0;
};

}  // namespace xtk
