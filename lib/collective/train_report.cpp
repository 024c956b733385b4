#include "collective/train_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "collective/sizes.hpp"
#include "core/clock.hpp"
#include "core/report.hpp"
#include "core/units.hpp"

namespace xtk::collective {
namespace {

std::vector<double> in_ms(const std::vector<double>& us) {
  std::vector<double> ms;
  ms.reserve(us.size());
  for (double v : us) ms.push_back(v / 1e3);
  return ms;
}

// A count that may be absent: null in JSON.
nlohmann::json nullable(const std::optional<std::uint64_t>& count) {
  return count ? nlohmann::json(*count) : nlohmann::json();
}

void add_to(std::optional<std::uint64_t>& total, const std::optional<std::uint64_t>& count) {
  if (count) total = total.value_or(0) + *count;
}

}  // namespace

std::string RankPart::encode() const {
  return nlohmann::json{{"iter_us", iter_us},
                        {"comm_us", comm_us},
                        {"exposed_us", exposed_us},
                        {"bytes", bytes_per_iteration},
                        {"wrong", wrong},
                        {"interrupted", interrupted},
                        {"tcp_retransmits", nullable(tcp_retransmits)},
                        {"tcp_timeouts", nullable(tcp_timeouts)},
                        {"tcp_rwnd_limited_us", nullable(tcp_rwnd_limited_us)}}
      .dump();
}

RankPart RankPart::decode(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  RankPart p;
  p.iter_us = j.at("iter_us").get<std::vector<double>>();
  p.comm_us = j.at("comm_us").get<std::vector<double>>();
  p.exposed_us = j.at("exposed_us").get<std::vector<double>>();
  p.bytes_per_iteration = j.at("bytes").get<std::uint64_t>();
  p.wrong = j.at("wrong").get<std::uint64_t>();
  p.interrupted = j.at("interrupted").get<bool>();
  for (auto [key, count] : {std::pair{"tcp_retransmits", &p.tcp_retransmits},
                            {"tcp_timeouts", &p.tcp_timeouts},
                            {"tcp_rwnd_limited_us", &p.tcp_rwnd_limited_us}}) {
    if (!j.at(key).is_null()) *count = j.at(key).get<std::uint64_t>();
  }
  return p;
}

void record_iteration(const IterationTiming& timing, std::uint64_t iter, std::int64_t t0_ns, std::int64_t wall0_ns,
                      std::uint64_t bytes, Job& job, RankPart& part, IterationWriter* writer, ProcessTcpCounts& tcp) {
  const std::int64_t t1 = monotonic_ns(), wall1 = realtime_ns();
  const double iter_us = static_cast<double>(t1 - t0_ns) / 1e3;
  const double comm_us = static_cast<double>(timing.comm_ns) / 1e3;
  part.iter_us.push_back(iter_us);
  part.comm_us.push_back(comm_us);
  part.exposed_us.push_back(static_cast<double>(timing.exposed_ns) / 1e3);
  const TcpCounts counts = tcp.take();
  if (counts.connections > 0) {
    add_to(part.tcp_retransmits, counts.retransmits);
    add_to(part.tcp_timeouts, counts.timeouts);
    add_to(part.tcp_rwnd_limited_us, counts.rwnd_limited_us);
  }
  if (writer == nullptr) return;
  for (std::uint32_t i = 0; i < job.ranks_per_process(); ++i) {
    const bool counted = i == 0 && counts.connections > 0;
    writer->write({job.first_rank() + i, iter, wall0_ns, wall1, iter_us, comm_us, bytes,
                   counted ? std::optional(counts.retransmits) : std::nullopt, counted ? counts.timeouts : std::nullopt,
                   counted ? std::optional(counts.rwnd_limited_us) : std::nullopt});
  }
}

TrainSummary summarize(const ModelProfile& profile, const BucketPlan& plan, const ComputeTimes& compute,
                       std::uint32_t ranks, const std::vector<std::string>& parts, const RankPart* own) {
  std::vector<RankPart> all;
  if (own != nullptr) all.push_back(*own);
  for (const auto& text : parts) all.push_back(RankPart::decode(text));
  TrainSummary s;
  s.model = profile.model;
  s.parameters = profile.parameters();
  s.gradient_bytes = profile.bytes();
  s.ranks = ranks;
  for (const auto& b : plan.plan.buckets) s.bucket_bytes.push_back(b.bytes);
  s.compute = compute;
  s.demand_bytes = all_reduce_bus_factor(ranks) * static_cast<double>(s.gradient_bytes);
  if (all.empty()) return s;
  s.iterations = all.front().iter_us.size();
  s.bytes_per_iteration = all.front().bytes_per_iteration;
  std::vector<double> job_ms(s.iterations, 0.0), comm, exposed;
  double sent = 0, comm_seconds = 0;
  for (const auto& p : all) {
    for (std::size_t k = 0; k < s.iterations && k < p.iter_us.size(); ++k) {
      job_ms[k] = std::max(job_ms[k], p.iter_us[k] / 1e3);
    }
    const auto c = in_ms(p.comm_us), e = in_ms(p.exposed_us);
    comm.insert(comm.end(), c.begin(), c.end());
    exposed.insert(exposed.end(), e.begin(), e.end());
    for (double v : p.comm_us) comm_seconds += v / 1e6;
    sent += static_cast<double>(p.bytes_per_iteration) * static_cast<double>(p.comm_us.size());
    s.wrong += p.wrong;
    s.interrupted = s.interrupted || p.interrupted;
    add_to(s.tcp_retransmits, p.tcp_retransmits);
    add_to(s.tcp_timeouts, p.tcp_timeouts);
    add_to(s.tcp_rwnd_limited_us, p.tcp_rwnd_limited_us);
  }
  s.iteration_ms = TimeStats::of(job_ms);
  s.comm_ms = TimeStats::of(comm);
  s.exposed_ms = TimeStats::of(exposed);
  s.busbw_gbyte_s = comm_seconds > 0 ? sent / comm_seconds / 1e9 : 0.0;
  return s;
}

nlohmann::json TrainSummary::to_json() const {
  return {{"model", model},
          {"parameters", parameters},
          {"gradient_bytes", gradient_bytes},
          {"ranks", ranks},
          {"buckets", bucket_bytes.size()},
          {"bucket_bytes", bucket_bytes},
          {"forward_ms", static_cast<double>(compute.forward_ns) / 1e6},
          {"backward_ms", static_cast<double>(compute.backward_ns) / 1e6},
          {"iterations", iterations},
          {"iteration", iteration_ms.to_json("_ms")},
          {"comm", comm_ms.to_json("_ms")},
          {"exposed_comm", exposed_ms.to_json("_ms")},
          {"bytes_per_iteration", bytes_per_iteration},
          {"busbw_gbyte_s", busbw_gbyte_s},
          {"demand_bytes", demand_bytes},
          {"demand_gbps", iteration_ms.mean > 0 ? demand_bytes * 8 / (iteration_ms.mean / 1e3) / 1e9 : 0.0},
          {"wrong", wrong},
          {"interrupted", interrupted},
          {"tcp_retransmits", nullable(tcp_retransmits)},
          {"tcp_timeouts", nullable(tcp_timeouts)},
          {"tcp_rwnd_limited_us", nullable(tcp_rwnd_limited_us)}};
}

void print_train_summary(std::ostream& out, const TrainSummary& s) {
  out << fmt::format("# model {}: {} parameters, {} of gradients in {} buckets on {} ranks\n", s.model, s.parameters,
                     format_bytes(static_cast<double>(s.gradient_bytes)), s.bucket_bytes.size(), s.ranks);
  out << fmt::format("# compute per iteration: forward {:.3f} ms, backward {:.3f} ms\n",
                     static_cast<double>(s.compute.forward_ns) / 1e6, static_cast<double>(s.compute.backward_ns) / 1e6);
  Table table({{"metric", 0}, {"n", 0}, {"mean_ms", 3}, {"p50_ms", 3}, {"p99_ms", 3}, {"max_ms", 3}, {"cv", 3}});
  const auto row = [&](const char* name, const TimeStats& t) {
    table.add_row({std::string(name), t.n, t.mean, t.p50, t.p99, t.max, t.cv});
  };
  row("iteration", s.iteration_ms);
  row("comm", s.comm_ms);
  row("exposed_comm", s.exposed_ms);
  table.print(out);
  const double demand_gbps = s.iteration_ms.mean > 0 ? s.demand_bytes * 8 / (s.iteration_ms.mean / 1e3) / 1e9 : 0.0;
  out << fmt::format("# bytes each rank sends per iteration: {} (2(n-1)/n x gradients)\n",
                     format_bytes(static_cast<double>(s.bytes_per_iteration)));
  out << fmt::format("# busbw while communicating: {:.3f} GB/s ({})\n", s.busbw_gbyte_s,
                     format_rate(s.busbw_gbyte_s * 8e9));
  out << fmt::format(
      "# theoretical demand D = 2(N-1)/N x P x bytes/param: {} per iteration, {} at the mean "
      "iteration time\n",
      format_bytes(s.demand_bytes), format_rate(demand_gbps * 1e9));
  if (s.tcp_retransmits) {
    out << fmt::format(
        "# TCP over the ranks' own connections: {} segments retransmitted, {} retransmission timeouts, senders held "
        "{:.1f} ms by receive windows\n",
        *s.tcp_retransmits, s.tcp_timeouts ? std::to_string(*s.tcp_timeouts) : "uncounted (Linux before 6.7)",
        static_cast<double>(s.tcp_rwnd_limited_us.value_or(0)) / 1e3);
  }
  out << fmt::format("# data check: {} wrong elements{}\n", s.wrong, s.wrong == 0 ? " (OK)" : " (FAILED)");
  if (s.interrupted) out << "# interrupted: stopped before the requested iterations\n";
  out.flush();
}

}  // namespace xtk::collective
