// Flow-size distributions given as CDF tables (the form every datacenter
// workload paper publishes), loaded, validated and sampled.
//
// File format (docs/formats.md): one point per line, "size cdf" or
// "size index cdf" (the middle column of empirical-traffic-gen files is ignored),
// separated by spaces, tabs or commas; '#' starts a comment. Sizes are bytes.
// Probabilities are fractions ending at 1 or percents ending at 100. A table
// whose first probability is above 0 gets an implicit (0 B, 0) point.
//
// Between points the distribution is uniform (linear interpolation of the
// CDF), the convention of HPCC's and TrafficGenerator's generators: web-search
// has a mean of 1,711,250 B under it.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "core/random.hpp"

namespace xtk {

struct CdfPoint {
  double size_bytes;
  double probability;  // in [0, 1] after loading
};

class FlowSizeCdf {
 public:
  // Parses a table; `source` names it in errors ("file:line: ...").
  static FlowSizeCdf parse(std::istream& in, std::string_view source, std::string name);
  static FlowSizeCdf load_file(const std::string& path);

  // The same distribution with every size multiplied by `factor` (> 0): the
  // flows of a faster network emulated on a slower one (xtk-gen --size-scale).
  FlowSizeCdf scaled(double factor) const;

  const std::string& name() const { return name_; }
  const std::vector<CdfPoint>& points() const { return points_; }
  double mean_bytes() const { return mean_; }
  double max_bytes() const { return points_.back().size_bytes; }
  double min_bytes() const;

  // Size at cumulative probability u in [0, 1] (inverse CDF, linear inside a bin).
  double quantile(double u) const;
  // P(size <= x).
  double cdf_at(double x) const;

  // A flow size in whole bytes, at least 1: inverse CDF of a uniform draw,
  // multiplied by `scale` (used by the burst profile to fit a phase).
  std::uint64_t sample(Rng& rng, double scale = 1.0) const;

 private:
  FlowSizeCdf(std::string name, std::vector<CdfPoint> points);
  std::size_t bin_for(double u) const;

  std::string name_;
  std::vector<CdfPoint> points_;
  double mean_ = 0;
  // Guide table: guide_[k] is the first bin whose upper probability reaches k/kGuide,
  // so a lookup scans a bin or two instead of a binary search.
  static constexpr std::size_t kGuide = 1024;
  std::vector<std::uint32_t> guide_;
};

// Resolves a CDF argument: an existing path, or a name looked up as
// NAME.cdf in $XTK_CDF_PATH (colon-separated), then the shipped configs/cdf.
std::string resolve_cdf_path(const std::string& name_or_path);

}  // namespace xtk
