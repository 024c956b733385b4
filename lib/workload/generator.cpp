#include "workload/generator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"

#ifndef XTK_VERSION
#define XTK_VERSION "0"
#endif

namespace xtk {
namespace {

// Independent random streams per source, so adding a class mix or another
// source never changes the arrivals or sizes already drawn.
enum Stream : std::uint64_t { kArrivals = 1, kSizes, kDestinations, kDscp, kRate, kCongestionControl };
Rng stream(const GenConfig& config, std::size_t source, Stream which) {
  return Rng(config.seed, static_cast<std::uint64_t>(source) * 16 + which);
}

std::string number(double v) { return fmt::format("{}", v); }

}  // namespace

Profile parse_profile(std::string_view text) {
  if (text == "consistent") return Profile::consistent;
  if (text == "burst") return Profile::burst;
  if (text == "long-lived") return Profile::long_lived;
  throw UsageError(fmt::format("--profile: '{}' is not a profile; use consistent, burst or long-lived", text));
}

std::string_view profile_name(Profile profile) {
  switch (profile) {
    case Profile::consistent:
      return "consistent";
    case Profile::burst:
      return "burst";
    case Profile::long_lived:
      return "long-lived";
  }
  return "?";
}

ScheduleHeader make_header(const GenConfig& config) {
  ScheduleHeader h;
  h.set("generator", fmt::format("xtk-gen {}", XTK_VERSION));
  h.set("profile", std::string(profile_name(config.profile)));
  if (config.profile != Profile::long_lived) {
    h.set("cdf", config.cdf->name());
    h.set("cdf_mean_bytes", fmt::format("{:.0f}", config.cdf->mean_bytes()));
    if (config.size_scale != 1.0) h.set("size_scale", number(config.size_scale));
  }
  h.set("seed", std::to_string(config.seed));
  h.set("load_bps_per_src", fmt::format("{:.0f}", config.load_bps));
  h.set("link_bps", fmt::format("{:.0f}", config.link_bps));
  h.set("duration_ns", std::to_string(config.duration_ns));
  h.set("pattern", std::string(pattern_name(config.pattern)));
  std::string sources;
  for (const auto& s : config.sources) sources += (sources.empty() ? "" : ",") + s;
  h.set("src", sources);
  h.set("dst", describe(config.destinations));
  if (config.profile == Profile::burst) {
    h.set("burst_width_ns", std::to_string(config.burst.width_ns));
    h.set("burst_period_ns", std::to_string(config.burst.period()));
    h.set("burst_height", number(config.burst.height));
    h.set("burst_min_flows", std::to_string(config.burst.min_burst_flows));
    h.set("rest_min_flows", std::to_string(config.burst.min_rest_flows));
  }
  if (config.profile == Profile::long_lived) {
    h.set("long_lived_flows", std::to_string(config.long_lived_flows));
    h.set("stagger_ns", std::to_string(config.stagger_ns));
  }
  if (config.dscp) h.set("dscp_mix", describe(*config.dscp));
  if (config.rate) h.set("rate_mix", describe(*config.rate));
  if (config.congestion_control) h.set("cc_mix", describe(*config.congestion_control));
  h.has_dscp = config.dscp.has_value();
  h.has_rate = config.rate.has_value() || config.profile == Profile::long_lived;
  h.has_cc = config.congestion_control.has_value();
  return h;
}

struct ScheduleGenerator::Source {
  std::unique_ptr<ArrivalProcess> process;
  DestinationChooser destinations;
  Rng dst_rng, dscp_rng, rate_rng, cc_rng;
  Arrival pending;
};

ScheduleGenerator::ScheduleGenerator(const GenConfig& config) : config_(config) {
  if (config.sources.empty()) throw UsageError("--src: at least one source is needed");
  if (config.destinations.empty()) throw UsageError("--dst: at least one destination is needed");
  if (config.duration_ns <= 0) throw UsageError("--duration must be above 0");
  if (!(config.load_bps >= 0) || !std::isfinite(config.load_bps)) throw UsageError("--load must be a rate >= 0");
  if (config.profile != Profile::long_lived && !config.cdf) throw UsageError("--cdf is required");
  if (config.profile == Profile::burst) config.burst.validate();
  if (config.profile == Profile::long_lived) {
    if (config.rate) throw UsageError("--flow-rate does not apply to long-lived flows: their cap is --load / --flows");
    if (config.long_lived_flows == 0) throw UsageError("--flows must be at least 1");
    if (config.stagger_ns > 0 &&
        static_cast<double>(config.long_lived_flows - 1) * static_cast<double>(config.stagger_ns) >=
            static_cast<double>(config.duration_ns)) {
      throw UsageError(fmt::format("--stagger: the last of {} flows would start after the {} ns duration",
                                   config.long_lived_flows, config.duration_ns));
    }
  }
  auto plan = plan_destinations(config.pattern, config.sources, config.destinations, config.seed);
  for (std::size_t i = 0; i < config.sources.size(); ++i) {
    auto source = std::make_unique<Source>(Source{nullptr,
                                                  std::move(plan[i]),
                                                  stream(config, i, kDestinations),
                                                  stream(config, i, kDscp),
                                                  stream(config, i, kRate),
                                                  stream(config, i, kCongestionControl),
                                                  {}});
    switch (config.profile) {
      case Profile::consistent:
        source->process = make_consistent(*config.cdf, config.load_bps, config.duration_ns,
                                          stream(config, i, kArrivals), stream(config, i, kSizes));
        break;
      case Profile::burst:
        source->process = make_burst(*config.cdf, config.load_bps, config.duration_ns, config.burst,
                                     stream(config, i, kArrivals), stream(config, i, kSizes));
        break;
      case Profile::long_lived:
        source->process =
            make_long_lived(config.long_lived_flows, config.load_bps, config.duration_ns, config.stagger_ns);
        break;
    }
    sources_.push_back(std::move(source));
  }
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    if (sources_[i]->process->next(sources_[i]->pending)) heap_.push_back(i);
  }
  std::make_heap(heap_.begin(), heap_.end(), [this](std::size_t a, std::size_t b) {
    const auto sa = sources_[a]->pending.start_ns, sb = sources_[b]->pending.start_ns;
    return sa != sb ? sa > sb : a > b;
  });
}

ScheduleGenerator::~ScheduleGenerator() = default;

bool ScheduleGenerator::next(Flow& flow) {
  if (heap_.empty()) return false;
  const auto later = [this](std::size_t a, std::size_t b) {
    const auto sa = sources_[a]->pending.start_ns, sb = sources_[b]->pending.start_ns;
    return sa != sb ? sa > sb : a > b;
  };
  std::size_t index = heap_.front();
  if (heap_.size() > 1) std::pop_heap(heap_.begin(), heap_.end(), later);
  Source& s = *sources_[index];
  const Arrival& a = s.pending;
  flow.id = next_id_++;
  flow.start_ns = a.start_ns;
  flow.src = config_.sources[index];
  flow.dst = s.destinations.pick(s.dst_rng);
  flow.size_bytes = a.size_bytes;
  flow.dscp = config_.dscp ? config_.dscp->pick(s.dscp_rng) : 0;
  flow.rate_bps = config_.rate ? config_.rate->pick(s.rate_rng) : a.rate_bps;
  flow.cc = config_.congestion_control ? std::string_view(config_.congestion_control->pick(s.cc_rng)) : "";
  if (s.process->next(s.pending)) {
    if (heap_.size() > 1) std::push_heap(heap_.begin(), heap_.end(), later);
  } else {
    heap_.erase(std::find(heap_.begin(), heap_.end(), index));
    std::make_heap(heap_.begin(), heap_.end(), later);
  }
  return true;
}

GenResult write_schedule(const GenConfig& config, const std::string& path) {
  GenResult result;
  const ScheduleHeader header = make_header(config);
  ScheduleGenerator generator(config);
  Flow flow;
  const bool split = path.find("{src}") != std::string::npos;
  if (!split) {
    ScheduleWriter writer(path, header);
    while (generator.next(flow)) {
      writer.write(flow);
      result.bytes += flow.size_bytes;
    }
    writer.close();
    result.flows = writer.flows_written();
    result.files.push_back(path);
    return result;
  }
  std::map<std::string_view, std::unique_ptr<ScheduleWriter>> writers;
  for (const auto& source : config.sources) {
    std::string file = path;
    for (auto at = file.find("{src}"); at != std::string::npos; at = file.find("{src}")) file.replace(at, 5, source);
    ScheduleHeader own = header;
    own.set("file_src", source);
    writers[source] = std::make_unique<ScheduleWriter>(file, own);
    result.files.push_back(file);
  }
  while (generator.next(flow)) {
    writers[flow.src]->write(flow);
    result.bytes += flow.size_bytes;
    ++result.flows;
  }
  for (auto& [name, writer] : writers) writer->close();
  return result;
}

}  // namespace xtk
