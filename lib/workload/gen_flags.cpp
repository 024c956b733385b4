#include "workload/gen_flags.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>

#include "core/cli.hpp"
#include "core/units.hpp"

namespace xtk {

void add_flags(CLI::App& app, GenFlags& f) {
  app.add_option("-p,--profile", f.profile, "consistent (Poisson), burst or long-lived")->capture_default_str();
  app.add_option("--cdf", f.cdf, "flow-size CDF: a file, or a name in $XTK_CDF_PATH or the shipped configs/cdf")
      ->capture_default_str();
  app.add_option("--size-scale", f.size_scale,
                 "multiply every flow size of the CDF (0.04 emulates a 25G network on a 1G link; docs/xtk-gen.md)")
      ->capture_default_str();
  app.add_option("-l,--load", f.load,
                 "load per source in flow bytes (payload): a rate (8G, 800M) or a share of --link (0.8, 80%)")
      ->capture_default_str();
  app.add_option("--link", f.link, "link rate, the base of a fractional --load")->capture_default_str();
  app.add_option("-t,--duration", f.duration, "schedule length (60s, 500ms)")->capture_default_str();
  app.add_option("--seed", f.seed, "random seed: same flags and seed give the same file")->capture_default_str();
  app.add_option("--src", f.src, "sources, comma-separated; each offers --load (one file each with -o '{src}.csv')")
      ->capture_default_str();
  app.add_option("--dst", f.dst,
                 "destinations with optional weights: h1:3,h2:1 ([v6addr]:w); default h1, or the --src hosts for "
                 "all-to-all and permutation");
  app.add_option("--pattern", f.pattern, "fan-out, one-to-one, fan-in, all-to-all or permutation")
      ->capture_default_str();
  app.add_option("--burst-width", f.burst_width, "burst: window length")->capture_default_str();
  app.add_option("--burst-period", f.burst_period, "burst: period (default 10 x width)");
  app.add_option("--burst-height", f.burst_height, "burst: rate in the window / mean rate")->capture_default_str();
  app.add_option("--min-burst-flows", f.min_burst_flows, "burst: flows per burst window at least")
      ->capture_default_str();
  app.add_option("--min-rest-flows", f.min_rest_flows, "burst: flows in the rest of each period at least")
      ->capture_default_str();
  app.add_option("--flows", f.flows, "long-lived: number of flows per source, each capped at load / flows")
      ->capture_default_str();
  app.add_option("--stagger", f.stagger, "long-lived: gap between flow starts")->capture_default_str();
  app.add_option("--dscp", f.dscp, "DSCP per flow: 26 or a weighted mix 0:0.7,26:0.3 (adds a dscp column)");
  app.add_option("--flow-rate", f.flow_rate, "pacing cap per flow: 100M or a mix 100M:0.5,0:0.5 (0 = none)");
  app.add_option("--cc", f.congestion_control,
                 "TCP congestion control per flow: bbr or a mix cubic:0.5,bbr:0.5 (adds a cc column)");
  app.add_option("-o,--out", f.out, "output file, '-' for stdout; a path with {src} writes one file per source")
      ->capture_default_str();
  app.add_flag("--inspect", f.inspect, "inspect what was written (needs -o FILE)");
  app.add_flag("--json", f.json, "with --inspect: JSON instead of the table");
}

std::vector<std::string> to_arguments(const GenFlags& f) {
  const GenFlags d;
  return Arguments()
      .option("--profile", f.profile, d.profile)
      .option("--cdf", f.cdf, d.cdf)
      .option("--size-scale", f.size_scale, d.size_scale)
      .option("--load", f.load, d.load)
      .option("--link", f.link, d.link)
      .option("--duration", f.duration, d.duration)
      .option("--seed", f.seed, d.seed)
      .option("--src", f.src, d.src)
      .option("--dst", f.dst, d.dst)
      .option("--pattern", f.pattern, d.pattern)
      .option("--burst-width", f.burst_width, d.burst_width)
      .option("--burst-period", f.burst_period, d.burst_period)
      .option("--burst-height", f.burst_height, d.burst_height)
      .option("--min-burst-flows", f.min_burst_flows, d.min_burst_flows)
      .option("--min-rest-flows", f.min_rest_flows, d.min_rest_flows)
      .option("--flows", f.flows, d.flows)
      .option("--stagger", f.stagger, d.stagger)
      .option("--dscp", f.dscp, d.dscp)
      .option("--flow-rate", f.flow_rate, d.flow_rate)
      .option("--cc", f.congestion_control, d.congestion_control)
      .option("--out", f.out, d.out)
      .flag("--inspect", f.inspect)
      .flag("--json", f.json)
      .list();
}

GenConfig to_config(const GenFlags& f) {
  GenConfig c;
  c.profile = parse_profile(f.profile);
  if (c.profile != Profile::long_lived) {
    if (!(f.size_scale > 0)) throw UsageError("--size-scale must be above 0");
    c.size_scale = f.size_scale;
    c.cdf = std::make_shared<FlowSizeCdf>(FlowSizeCdf::load_file(resolve_cdf_path(f.cdf)).scaled(f.size_scale));
  }
  c.link_bps = parse_flag("--link", f.link, parse_rate_bps);
  const Load load = parse_flag("--load", f.load, parse_load);
  c.load_bps = load.resolve_bps(c.link_bps);
  c.duration_ns = parse_flag("--duration", f.duration, parse_duration_ns);
  c.seed = f.seed;
  const auto sources = parse_host_mix(f.src, "--src");
  for (double w : sources.weights()) {
    if (w != 1.0) throw UsageError("--src: sources take no weight (each offers the whole --load)");
  }
  c.sources = sources.values();
  c.pattern = parse_pattern(f.pattern);
  // all-to-all and permutation default to the sources as their destinations.
  const bool among_sources = c.pattern == Pattern::all_to_all || c.pattern == Pattern::permutation;
  const std::string dst = !f.dst.empty() ? f.dst : among_sources ? f.src : "h1";
  c.destinations = parse_host_mix(dst, "--dst");
  c.burst.width_ns = parse_flag("--burst-width", f.burst_width, parse_duration_ns);
  c.burst.period_ns = f.burst_period.empty() ? 0 : parse_flag("--burst-period", f.burst_period, parse_duration_ns);
  c.burst.height = f.burst_height;
  c.burst.min_burst_flows = f.min_burst_flows;
  c.burst.min_rest_flows = f.min_rest_flows;
  c.long_lived_flows = f.flows;
  c.stagger_ns = parse_flag("--stagger", f.stagger, parse_duration_ns);
  if (!f.dscp.empty()) c.dscp = parse_dscp_mix(f.dscp, "--dscp");
  if (!f.flow_rate.empty()) c.rate = parse_rate_mix(f.flow_rate, "--flow-rate");
  if (!f.congestion_control.empty()) c.congestion_control = parse_congestion_control_mix(f.congestion_control, "--cc");
  return c;
}

}  // namespace xtk
