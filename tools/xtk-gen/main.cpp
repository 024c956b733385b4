// xtk-gen: writes flow schedules from a flow-size CDF and a load profile, and
// inspects schedules (offered load per window, burst ratio, sizes).
#include <fmt/format.h>

#include <iostream>

#include "core/cli.hpp"
#include "core/units.hpp"
#include "workload/generator.hpp"
#include "workload/inspect.hpp"

namespace {

struct GenFlags {
  std::string profile = "consistent", cdf = "web-search", load = "50%", link = "25G", duration = "10s";
  std::uint64_t seed = 1;
  std::string src = "h0", dst, pattern = "fan-out";
  std::string burst_width = "1ms", burst_period, dscp, flow_rate, stagger = "0";
  double burst_height = 3.0, size_scale = 1.0;
  std::uint32_t min_burst_flows = 2, min_rest_flows = 8, flows = 1;
  std::string out = "-";
  bool inspect = false, json = false;
};

struct InspectFlags {
  std::vector<std::string> files;
  std::string windows = "1ms,10ms", burst_width, burst_period;
  bool json = false;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::string item;
  for (char c : text) {
    if (c == ',') {
      out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  out.push_back(item);
  return out;
}

xtk::GenConfig make_config(const GenFlags& f) {
  xtk::GenConfig c;
  c.profile = xtk::parse_profile(f.profile);
  if (c.profile != xtk::Profile::long_lived) {
    if (!(f.size_scale > 0)) throw xtk::UsageError("--size-scale must be above 0");
    c.size_scale = f.size_scale;
    c.cdf = std::make_shared<xtk::FlowSizeCdf>(
        xtk::FlowSizeCdf::load_file(xtk::resolve_cdf_path(f.cdf)).scaled(f.size_scale));
  }
  try {
    c.link_bps = xtk::parse_rate_bps(f.link);
  } catch (const xtk::UsageError& e) {
    throw xtk::UsageError(fmt::format("--link: {}", e.what()));
  }
  xtk::Load load;
  try {
    load = xtk::parse_load(f.load);
  } catch (const xtk::UsageError& e) {
    throw xtk::UsageError(fmt::format("--load: {}", e.what()));
  }
  c.load_bps = load.resolve_bps(c.link_bps);
  c.duration_ns = xtk::parse_flag("--duration", f.duration, xtk::parse_duration_ns);
  c.seed = f.seed;
  const auto sources = xtk::parse_host_mix(f.src, "--src");
  for (double w : sources.weights()) {
    if (w != 1.0) throw xtk::UsageError("--src: sources take no weight (each offers the whole --load)");
  }
  c.sources = sources.values();
  c.pattern = xtk::parse_pattern(f.pattern);
  // all-to-all and permutation default to the sources as their destinations.
  const bool among_sources = c.pattern == xtk::Pattern::all_to_all || c.pattern == xtk::Pattern::permutation;
  const std::string dst = !f.dst.empty() ? f.dst : among_sources ? f.src : "h1";
  c.destinations = xtk::parse_host_mix(dst, "--dst");
  c.burst.width_ns = xtk::parse_flag("--burst-width", f.burst_width, xtk::parse_duration_ns);
  c.burst.period_ns =
      f.burst_period.empty() ? 0 : xtk::parse_flag("--burst-period", f.burst_period, xtk::parse_duration_ns);
  c.burst.height = f.burst_height;
  c.burst.min_burst_flows = f.min_burst_flows;
  c.burst.min_rest_flows = f.min_rest_flows;
  c.long_lived_flows = f.flows;
  c.stagger_ns = xtk::parse_flag("--stagger", f.stagger, xtk::parse_duration_ns);
  if (!f.dscp.empty()) c.dscp = xtk::parse_dscp_mix(f.dscp, "--dscp");
  if (!f.flow_rate.empty()) c.rate = xtk::parse_rate_mix(f.flow_rate, "--flow-rate");
  return c;
}

void inspect_file(const std::string& path, const xtk::InspectOptions& options, bool json) {
  auto reader = xtk::ScheduleReader::open(path);
  auto report = xtk::inspect_schedule(*reader, options);
  report.source = path;
  if (json) {
    std::cout << xtk::to_json(report).dump() << '\n';
  } else {
    xtk::print_report(report, std::cout);
  }
}

}  // namespace

// run_tool turns every exception into an exit status; CLI11's set-up throws only on programming errors.
int main(int argc, char** argv) {  // NOLINT(bugprone-exception-escape)
  CLI::App app{
      "Write a schedule of flows (start time, destination, size) from a flow-size CDF and a load profile,\n"
      "or inspect one. The schedule format is in docs/formats.md.\n\n"
      "  xtk-gen --profile burst --cdf web-search --load 0.8 --link 1G --duration 60s -o burst.csv\n"
      "  xtk-gen inspect burst.csv",
      "xtk-gen"};
  app.set_version_flag("--version", std::string("xtk-gen ") + XTK_VERSION);
  app.require_subcommand(0, 1);
  GenFlags g;
  app.add_option("-p,--profile", g.profile, "consistent (Poisson), burst or long-lived")->capture_default_str();
  app.add_option("--cdf", g.cdf, "flow-size CDF: a shipped name (configs/cdf) or a file")->capture_default_str();
  app.add_option("--size-scale", g.size_scale,
                 "multiply every flow size of the CDF (0.04 emulates a 25G network on a 1G link; docs/xtk-gen.md)")
      ->capture_default_str();
  app.add_option("-l,--load", g.load, "load per source: a rate (8G, 800M) or a share of --link (0.8, 80%)")
      ->capture_default_str();
  app.add_option("--link", g.link, "link rate, the base of a fractional --load")->capture_default_str();
  app.add_option("-t,--duration", g.duration, "schedule length (60s, 500ms)")->capture_default_str();
  app.add_option("--seed", g.seed, "random seed: same flags and seed give the same file")->capture_default_str();
  app.add_option("--src", g.src, "sources, comma-separated; each offers --load (one file each with -o '{src}.csv')")
      ->capture_default_str();
  app.add_option("--dst", g.dst,
                 "destinations with optional weights: h1:3,h2:1 ([v6addr]:w); default h1, or the --src hosts for "
                 "all-to-all and permutation");
  app.add_option("--pattern", g.pattern, "fan-out, one-to-one, fan-in, all-to-all or permutation")
      ->capture_default_str();
  app.add_option("--burst-width", g.burst_width, "burst: window length")->capture_default_str();
  app.add_option("--burst-period", g.burst_period, "burst: period (default 10 x width)");
  app.add_option("--burst-height", g.burst_height, "burst: rate in the window / mean rate")->capture_default_str();
  app.add_option("--min-burst-flows", g.min_burst_flows, "burst: flows per burst window at least")
      ->capture_default_str();
  app.add_option("--min-rest-flows", g.min_rest_flows, "burst: flows in the rest of each period at least")
      ->capture_default_str();
  app.add_option("--flows", g.flows, "long-lived: number of flows, each capped at load / flows")->capture_default_str();
  app.add_option("--stagger", g.stagger, "long-lived: gap between flow starts")->capture_default_str();
  app.add_option("--dscp", g.dscp, "DSCP per flow: 26 or a weighted mix 0:0.7,26:0.3 (adds a dscp column)");
  app.add_option("--flow-rate", g.flow_rate, "pacing cap per flow: 100M or a mix 100M:0.5,0:0.5 (0 = none)");
  app.add_option("-o,--out", g.out, "output file, '-' for stdout; a path with {src} writes one file per source")
      ->capture_default_str();
  app.add_flag("--inspect", g.inspect, "inspect what was written (needs -o FILE)");
  app.add_flag("--json", g.json, "with --inspect: JSON instead of the table");

  InspectFlags in;
  auto* inspect = app.add_subcommand("inspect", "offered load per window, burst ratio and sizes of schedule files");
  inspect->add_option("files", in.files, "schedule files ('-' = stdin)")->required();
  inspect->add_option("--window", in.windows, "window lengths for per-window load")->capture_default_str();
  inspect->add_option("--burst-width", in.burst_width, "burst grid width (default: from the header)");
  inspect->add_option("--burst-period", in.burst_period, "burst grid period (default: from the header)");
  inspect->add_flag("--json", in.json, "one JSON object per file instead of the table");

  return xtk::run_tool(app, argc, argv, [&] {
    if (inspect->parsed()) {
      xtk::InspectOptions options;
      options.windows_ns.clear();
      for (const auto& w : split_list(in.windows)) {
        options.windows_ns.push_back(xtk::parse_flag("--window", w, xtk::parse_duration_ns));
        if (options.windows_ns.back() <= 0) throw xtk::UsageError("--window: windows must be above 0");
      }
      if (!in.burst_width.empty())
        options.burst_width_ns = xtk::parse_flag("--burst-width", in.burst_width, xtk::parse_duration_ns);
      if (!in.burst_period.empty())
        options.burst_period_ns = xtk::parse_flag("--burst-period", in.burst_period, xtk::parse_duration_ns);
      for (std::size_t i = 0; i < in.files.size(); ++i) {
        if (i > 0 && !in.json) std::cout << '\n';
        inspect_file(in.files[i], options, in.json);
      }
      return;
    }
    if (g.inspect && g.out == "-") throw xtk::UsageError("--inspect needs -o FILE (the schedule is read back)");
    const auto config = make_config(g);
    const auto result = xtk::write_schedule(config, g.out);
    if (g.out != "-") {
      std::cerr << fmt::format("xtk-gen: wrote {} flows, {} bytes ({}) to {}\n", result.flows, result.bytes,
                               xtk::format_bytes(static_cast<double>(result.bytes)), fmt::join(result.files, ", "));
    }
    if (g.inspect) {
      for (std::size_t i = 0; i < result.files.size(); ++i) {
        if (i > 0 && !g.json) std::cout << '\n';
        inspect_file(result.files[i], {}, g.json);
      }
    }
  });
}
