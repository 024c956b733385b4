#include "capture/counter_rates.hpp"

#include <fnmatch.h>

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <unordered_map>

#include "capture/counter_source.hpp"
#include "core/error.hpp"
#include "formats/counters.hpp"
#include "formats/text_output.hpp"

namespace xtk::capture {
namespace {

bool matches(const std::vector<std::string>& globs, const std::string& text) {
  return std::any_of(globs.begin(), globs.end(),
                     [&](const std::string& g) { return fnmatch(g.c_str(), text.c_str(), 0) == 0; });
}

struct State {
  CounterRateSummary summary;
  bool wanted = false;
  bool has_previous = false;
  std::int64_t t_ns = 0;
  std::uint64_t value = 0;
  bool slow = false;
};

}  // namespace

double CounterRateSummary::mean_per_s() const {
  return rated_ns > 0 ? static_cast<double>(rated_delta) / (static_cast<double>(rated_ns) * 1e-9) : 0;
}

CounterRateResult analyze_counters(const std::string& path, const CounterRateOptions& o) {
  // Bounds of one clock compare before any row: an empty window is a mistake, not a result.
  if (o.from && o.to && o.from->absolute == o.to->absolute && o.to->ns <= o.from->ns) {
    throw UsageError("--to must be after --from");
  }
  CounterRateResult result;
  result.path = path;
  CountersReader reader(path);
  if (const auto period = reader.header("period_ns"))
    result.period_ns = std::strtoll(std::string(*period).c_str(), nullptr, 10);
  std::unique_ptr<TextOutput> out;
  if (!o.rates_path.empty()) {
    out = std::make_unique<TextOutput>(o.rates_path);
    out->print("# xtk-counter-rates\n# format_version=1\n# source_file={}\n", path);
    out->write("t_ns,realtime_ns,interval_ns,source,name,delta,rate_per_s,rate_bps,status\n");
  }
  std::vector<std::unique_ptr<State>> states;
  std::unordered_map<std::string, std::size_t> index;
  std::size_t guess = 0;  // samples repeat the same counter order: the next row is usually the next counter
  std::string key;
  CounterSample row;
  std::int64_t from = INT64_MIN, to = INT64_MAX;
  bool first = true;
  while (reader.next(row)) {
    if (first) {
      result.first_t_ns = row.t_ns;
      auto resolve = [&](const TimeBound& b) { return b.absolute ? b.ns : row.t_ns + b.ns; };
      if (o.from) from = resolve(*o.from);
      if (o.to) to = resolve(*o.to);
      first = false;
    }
    ++result.rows;
    result.last_t_ns = std::max(result.last_t_ns, row.t_ns);
    // Absolute bounds are CLOCK_REALTIME, relative ones CLOCK_MONOTONIC.
    const std::int64_t when_from = o.from && o.from->absolute ? row.realtime_ns : row.t_ns;
    const std::int64_t when_to = o.to && o.to->absolute ? row.realtime_ns : row.t_ns;
    const bool inside = when_from >= from && when_to <= to;

    State* s = nullptr;
    if (guess < states.size() && states[guess]->summary.source == row.source &&
        states[guess]->summary.name == row.name) {
      s = states[guess].get();
    } else {
      key.assign(row.source).push_back('\0');
      key.append(row.name);
      auto [it, added] = index.try_emplace(key, states.size());
      if (added) {
        auto fresh = std::make_unique<State>();
        fresh->summary.source = row.source;
        fresh->summary.name = row.name;
        fresh->summary.bytes_per_unit = counter_bytes_per_unit(fresh->summary.name);
        fresh->wanted = matches(o.sources, fresh->summary.source) && matches(o.names, fresh->summary.name);
        states.push_back(std::move(fresh));
      }
      guess = it->second;
      s = states[guess].get();
    }
    guess = (guess + 1) % states.size();
    if (!s->wanted || !inside) {
      s->has_previous = false;  // an interval must lie wholly inside the window
      continue;
    }
    CounterRateSummary& c = s->summary;
    ++c.samples;
    if (s->has_previous) {
      if (row.t_ns <= s->t_ns) {
        throw InputError(
            path, reader.line(),
            fmt::format("t_ns {} of {} {} is not after its previous sample's {}", row.t_ns, c.source, c.name, s->t_ns));
      }
      const std::int64_t interval = row.t_ns - s->t_ns;
      ++c.intervals;
      std::optional<std::uint64_t> delta;
      const char* status = "ok";
      delta = counter_increase(s->value, row.value);
      if (!delta) {
        status = "reset";
        ++c.resets;
      } else if (row.value < s->value) {
        status = "wrap";
        ++c.wraps;
      }
      const bool slow = row.slow || s->slow;
      if (delta && slow) {
        status = "slow";
        ++c.slow;
      }
      std::optional<double> per_s;
      if (delta) {
        c.delta += *delta;
        if (!slow) {
          per_s = static_cast<double>(*delta) / (static_cast<double>(interval) * 1e-9);
          c.rated_delta += *delta;
          c.rated_ns += interval;
          c.per_s.add(static_cast<std::uint64_t>(*per_s));
          c.max_per_s = std::max(c.max_per_s, *per_s);
        }
      }
      if (out) {
        out->print("{},{},{},{},{},", row.t_ns, row.realtime_ns, interval, c.source, c.name);
        if (delta) out->print("{}", *delta);
        out->write(",");
        if (per_s) out->print("{:.6g}", *per_s);
        out->write(",");
        if (per_s && c.bytes_per_unit > 0) out->print("{:.0f}", *per_s * c.bytes_per_unit * 8);
        out->print(",{}\n", status);
      }
    }
    s->has_previous = true;
    s->t_ns = row.t_ns;
    s->value = row.value;
    s->slow = row.slow;
  }
  if (out) out->close();
  for (auto& s : states) {
    if (s->wanted) result.counters.push_back(std::move(s->summary));
  }
  if (result.counters.empty() && result.rows > 0) {
    throw UsageError(fmt::format("{}: no counter matches --source {} --name {}", path, fmt::join(o.sources, ","),
                                 fmt::join(o.names, ",")));
  }
  return result;
}

Table counter_rate_table(const CounterRateResult& r) {
  Table t({{"source"},
           {"name"},
           {"samples"},
           {"intervals"},
           {"slow"},
           {"resets"},
           {"wraps"},
           {"delta"},
           {"mean_per_s", 1},
           {"p50_per_s", 1},
           {"p99_per_s", 1},
           {"max_per_s", 1},
           {"mean_bps", 0},
           {"p99_bps", 0},
           {"max_bps", 0}});
  for (const auto& c : r.counters) {
    const double unit_bits = c.bytes_per_unit * 8.0;
    auto bps = [&](double per_s) -> Cell {
      if (c.bytes_per_unit == 0) return std::string("-");
      return per_s * unit_bits;
    };
    const bool rated = c.per_s.count() > 0;
    const double p50 = rated ? c.per_s.quantile(0.5) : 0, p99 = rated ? c.per_s.quantile(0.99) : 0;
    t.add_row({c.source, c.name, c.samples, c.intervals, c.slow, c.resets, c.wraps, c.delta, c.mean_per_s(), p50, p99,
               c.max_per_s, bps(c.mean_per_s()), bps(p99), bps(c.max_per_s)});
  }
  return t;
}

nlohmann::json counter_rate_json(const CounterRateResult& r) {
  auto counters = nlohmann::json::array();
  for (const auto& c : r.counters) {
    const bool rated = c.per_s.count() > 0;
    const double p50 = rated ? c.per_s.quantile(0.5) : 0, p99 = rated ? c.per_s.quantile(0.99) : 0;
    auto bps = [&](double per_s) {
      return c.bytes_per_unit == 0 ? nlohmann::json(nullptr) : nlohmann::json(per_s * c.bytes_per_unit * 8.0);
    };
    counters.push_back({{"source", c.source},
                        {"name", c.name},
                        {"bytes_per_unit", c.bytes_per_unit},
                        {"samples", c.samples},
                        {"intervals", c.intervals},
                        {"slow", c.slow},
                        {"resets", c.resets},
                        {"wraps", c.wraps},
                        {"delta", c.delta},
                        {"mean_per_s", c.mean_per_s()},
                        {"p50_per_s", p50},
                        {"p99_per_s", p99},
                        {"max_per_s", c.max_per_s},
                        {"mean_bps", bps(c.mean_per_s())},
                        {"p99_bps", bps(p99)},
                        {"max_bps", bps(c.max_per_s)}});
  }
  return {{"format_version", 1},        {"file", r.path},           {"period_ns", r.period_ns}, {"rows", r.rows},
          {"first_t_ns", r.first_t_ns}, {"last_t_ns", r.last_t_ns}, {"counters", counters}};
}

}  // namespace xtk::capture
