#include "flow/summary.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/report.hpp"
#include "core/units.hpp"

namespace xtk {

ClientSummary::ClientSummary(SummaryInputs inputs) : in_(inputs) {}

std::size_t ClientSummary::bin_of(std::uint64_t size) {
  if (size <= 100'000) return 0;
  if (size <= 1'000'000) return 1;
  if (size <= 10'000'000) return 2;
  return 3;
}

void ClientSummary::add(const FlowRecord& r) {
  ++flows_;
  ++by_status_[static_cast<std::size_t>(r.status)];
  if (r.start_ns >= 0) {
    bytes_started_ += r.size_bytes;
    const auto lateness = static_cast<std::uint64_t>(std::max<std::int64_t>(0, r.start_ns - r.sched_start_ns));
    lateness_ns_.add(lateness);
    if (lateness > kLateStartNs) ++late_over_100us_;
    if (lateness > 1'000'000) ++late_over_1ms_;
    if (in_.duration_ns > 0) {
      if (r.sched_start_ns < in_.duration_ns / 10) early_.add(lateness);
      if (r.sched_start_ns >= in_.duration_ns - in_.duration_ns / 10) late_.add(lateness);
    }
  }
  if (r.status == FlowStatus::ok) {
    bytes_ok_ += r.size_bytes;
    const auto fct = static_cast<std::uint64_t>(std::max<std::int64_t>(0, r.end_ns - r.start_ns));
    fct_ns_.add(fct);
    Bin& bin = bins_[bin_of(r.size_bytes)];
    ++bin.flows;
    bin.fct_ns.add(fct);
    if (in_.link_bps > 0) {
      const double ideal_ns = static_cast<double>(r.size_bytes) * 8 / in_.link_bps * 1e9;
      bin.slowdown_milli.add(static_cast<std::uint64_t>(static_cast<double>(fct) / std::max(ideal_ns, 1.0) * 1000));
    }
  } else if (!r.error.empty()) {
    if (errors_++ == 0) first_error_ = fmt::format("flow {}: {}", r.flow_id, r.error);
  }
}

double ClientSummary::offered_bps() const {
  return in_.duration_ns > 0 ? static_cast<double>(bytes_started_) * 8e9 / static_cast<double>(in_.duration_ns) : 0;
}

double ClientSummary::goodput_bps() const { return goodput_bps_at(elapsed_ns_); }

double ClientSummary::goodput_bps_at(std::int64_t elapsed_ns) const {
  return elapsed_ns > 0 ? static_cast<double>(bytes_ok_) * 8e9 / static_cast<double>(elapsed_ns) : 0;
}

void ClientSummary::print(std::ostream& out) const {
  const auto line = [&](std::string_view name, const std::string& value) {
    out << fmt::format("  {:<26} {}\n", name, value);
  };
  line("flows",
       fmt::format("{} (ok {}, failed {}, timeout {}, cancelled {})", flows_, flows_with(FlowStatus::ok),
                   flows_with(FlowStatus::failed), flows_with(FlowStatus::timeout), flows_with(FlowStatus::cancelled)));
  if (in_.requested_bps > 0) line("requested load", format_rate(in_.requested_bps));
  line("offered load", format_rate(offered_bps()));
  line("goodput", format_rate(goodput_bps()));
  line("lateness p50/p99/p99.9/max", fmt::format("{:.1f} / {:.1f} / {:.1f} / {:.1f} us",
                                                 lateness_ns_.quantile(0.5) / 1e3, lateness_ns_.quantile(0.99) / 1e3,
                                                 lateness_ns_.quantile(0.999) / 1e3, lateness_ns_.quantile(1) / 1e3));
  const double started = static_cast<double>(std::max<std::uint64_t>(1, lateness_ns_.count()));
  line("later than 100 us/1 ms", fmt::format("{} ({:.3f} %) / {} ({:.3f} %) flows", late_over_100us_,
                                             100.0 * static_cast<double>(late_over_100us_) / started, late_over_1ms_,
                                             100.0 * static_cast<double>(late_over_1ms_) / started));
  line("late by cause", late_starts_.describe());
  line("drift (p50 late-early)", fmt::format("{:+.1f} us (first 10 %: {:.1f} us, last 10 %: {:.1f} us)",
                                             (late_.quantile(0.5) - early_.quantile(0.5)) / 1e3,
                                             early_.quantile(0.5) / 1e3, late_.quantile(0.5) / 1e3));
  std::string waits = fmt::format("{} flows", connection_waits_);
  if (pool_ahead_ns_ >= 0) {
    waits += fmt::format(" (pool look-ahead up to {:.1f} ms{})", static_cast<double>(pool_ahead_ns_) / 1e6,
                         pool_ahead_at_ceiling_ ? ", its ceiling: handshakes took 250 ms or more" : "");
  }
  line("waited for connection", waits);
  if (errors_ > 0) line("errors", fmt::format("{} (first: {})", errors_, first_error_));
  out << "\n";
  Table fct({{"size_bin", 0},
             {"flows", 0},
             {"fct_p50_us", 1},
             {"fct_p99_us", 1},
             {"fct_p999_us", 1},
             {"slowdown_p50", 2},
             {"slowdown_p99", 2}});
  const auto row = [&](const std::string& name, std::uint64_t flows, const LogHistogram& h,
                       const LogHistogram* slowdown) {
    fct.add_row({name, flows, h.quantile(0.5) / 1e3, h.quantile(0.99) / 1e3, h.quantile(0.999) / 1e3,
                 slowdown && slowdown->count() ? slowdown->quantile(0.5) / 1e3 : 0.0,
                 slowdown && slowdown->count() ? slowdown->quantile(0.99) / 1e3 : 0.0});
  };
  row("all", flows_with(FlowStatus::ok), fct_ns_, nullptr);
  for (std::size_t b = 0; b < bins_.size(); ++b)
    row(kBinNames[b], bins_[b].flows, bins_[b].fct_ns, &bins_[b].slowdown_milli);
  fct.print(out);
}

nlohmann::json ClientSummary::to_json() const {
  nlohmann::json j;
  j["flows"] = flows_;
  for (auto s : {FlowStatus::ok, FlowStatus::failed, FlowStatus::timeout, FlowStatus::cancelled}) {
    j["flows_by_status"][std::string(status_name(s))] = flows_with(s);
  }
  j["requested_bps"] = in_.requested_bps;
  j["offered_bps"] = offered_bps();
  j["goodput_bps"] = goodput_bps();
  j["elapsed_ns"] = elapsed_ns_;
  j["connection_waits"] = connection_waits_;
  j["pool_ahead_ns"] = pool_ahead_ns_ >= 0 ? nlohmann::json(pool_ahead_ns_) : nlohmann::json(nullptr);
  j["pool_ahead_at_ceiling"] = pool_ahead_at_ceiling_;
  j["lateness_us"] = {{"p50", lateness_ns_.quantile(0.5) / 1e3},
                      {"p99", lateness_ns_.quantile(0.99) / 1e3},
                      {"p999", lateness_ns_.quantile(0.999) / 1e3},
                      {"max", lateness_ns_.quantile(1) / 1e3}};
  j["flows_late_over_100us"] = late_over_100us_;
  j["flows_late_over_1ms"] = late_over_1ms_;
  j["late_causes"] = late_starts_.to_json();
  j["drift_us"] = {{"first_10pct_p50", early_.quantile(0.5) / 1e3},
                   {"last_10pct_p50", late_.quantile(0.5) / 1e3},
                   {"last_minus_first", (late_.quantile(0.5) - early_.quantile(0.5)) / 1e3}};
  const auto fct_json = [](const LogHistogram& h) {
    return nlohmann::json{
        {"p50", h.quantile(0.5) / 1e3}, {"p99", h.quantile(0.99) / 1e3}, {"p999", h.quantile(0.999) / 1e3}};
  };
  j["fct_us"] = fct_json(fct_ns_);
  for (std::size_t b = 0; b < bins_.size(); ++b) {
    nlohmann::json bin{{"flows", bins_[b].flows}, {"fct_us", fct_json(bins_[b].fct_ns)}};
    if (bins_[b].slowdown_milli.count()) {
      bin["slowdown"] = {{"p50", bins_[b].slowdown_milli.quantile(0.5) / 1e3},
                         {"p99", bins_[b].slowdown_milli.quantile(0.99) / 1e3}};
    }
    j["size_bins"][kBinNames[b]] = bin;
  }
  if (errors_ > 0) j["first_error"] = first_error_;
  return j;
}

}  // namespace xtk
