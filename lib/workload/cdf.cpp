#include "workload/cdf.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/data_files.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace xtk {
namespace {

// Sizes must stay exact in a double and far from uint64 overflow: 2^53 B (8 PiB).
constexpr double kMaxFlowBytes = 9007199254740992.0;

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == ',' || line[i] == '\r')) ++i;
    std::size_t start = i;
    while (i < line.size() && !(line[i] == ' ' || line[i] == '\t' || line[i] == ',' || line[i] == '\r')) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

double field_value(std::string_view field, std::string_view what, std::string_view source, std::uint64_t line) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (ec != std::errc() || ptr != field.data() + field.size() || !std::isfinite(value)) {
    throw InputError(source, line, fmt::format("{} '{}' is not a number", what, field));
  }
  if (value < 0) throw InputError(source, line, fmt::format("{} {} is negative", what, field));
  return value;
}

}  // namespace

FlowSizeCdf FlowSizeCdf::parse(std::istream& in, std::string_view source, std::string name) {
  struct Raw {
    double size, probability;
    std::uint64_t line;
  };
  std::vector<Raw> raw;
  std::string text;
  std::uint64_t line_no = 0;
  while (std::getline(in, text)) {
    ++line_no;
    std::string_view line(text);
    if (line_no == 1) line = without_byte_order_mark(line);
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    auto fields = split_fields(line);
    if (fields.empty()) continue;
    if (fields.size() != 2 && fields.size() != 3) {
      throw InputError(source, line_no,
                       fmt::format("expected 2 columns (size cdf) or 3 (size index cdf), found {}", fields.size()));
    }
    const double size = field_value(fields.front(), "size", source, line_no);
    const double probability = field_value(fields.back(), "probability", source, line_no);
    if (size > kMaxFlowBytes) {
      throw InputError(source, line_no, fmt::format("size {} is above the largest flow size xtk takes, 2^53 B", size));
    }
    if (!raw.empty()) {
      if (size < raw.back().size) {
        throw InputError(source, line_no,
                         fmt::format("size {} is smaller than {} on line {}: sizes must not decrease", size,
                                     raw.back().size, raw.back().line));
      }
      if (probability < raw.back().probability) {
        throw InputError(source, line_no,
                         fmt::format("probability {} is smaller than {} on line {}: the CDF must not decrease",
                                     probability, raw.back().probability, raw.back().line));
      }
    }
    raw.push_back({size, probability, line_no});
  }
  if (in.bad()) throw InputError(source, 0, "read error");
  if (raw.empty()) throw InputError(source, 0, "no CDF points: expected lines of 'size cdf'");

  const double last = raw.back().probability;
  double unit = 0;
  if (std::fabs(last - 1.0) <= 1e-6) {
    unit = 1.0;
  } else if (std::fabs(last - 100.0) <= 1e-4) {
    unit = 100.0;
  } else {
    throw InputError(source, raw.back().line,
                     fmt::format("last probability is {}: a CDF must end at 1 (fractions) or 100 (percents)", last));
  }
  std::vector<CdfPoint> points;
  points.reserve(raw.size() + 1);
  if (raw.front().probability > 0) points.push_back({0.0, 0.0});
  for (const auto& r : raw) {
    points.push_back({r.size, std::min(1.0, r.probability / unit)});
  }
  points.back().probability = 1.0;
  if (points.back().size_bytes <= 0) throw InputError(source, raw.back().line, "the largest size must be above 0");
  return FlowSizeCdf(std::move(name), std::move(points));
}

FlowSizeCdf FlowSizeCdf::load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open CDF file", path));
  return parse(in, path, std::filesystem::path(path).stem().string());
}

FlowSizeCdf FlowSizeCdf::scaled(double factor) const {
  if (!(factor > 0)) throw UsageError(fmt::format("a CDF's size scale must be above 0, not {}", factor));
  std::vector<CdfPoint> points = points_;
  for (auto& p : points) p.size_bytes *= factor;
  return {name_, std::move(points)};
}

FlowSizeCdf::FlowSizeCdf(std::string name, std::vector<CdfPoint> points)
    : name_(std::move(name)), points_(std::move(points)) {
  for (std::size_t i = 1; i < points_.size(); ++i) {
    mean_ +=
        (points_[i].probability - points_[i - 1].probability) * (points_[i].size_bytes + points_[i - 1].size_bytes) / 2;
  }
  guide_.resize(kGuide + 1);
  std::size_t bin = 1;
  for (std::size_t k = 0; k <= kGuide; ++k) {
    const double u = static_cast<double>(k) / kGuide;
    while (bin + 1 < points_.size() && points_[bin].probability < u) ++bin;
    guide_[k] = static_cast<std::uint32_t>(bin);
  }
}

double FlowSizeCdf::min_bytes() const {
  for (std::size_t i = 1; i < points_.size(); ++i) {
    if (points_[i].probability > 0) return points_[i - 1].size_bytes;
  }
  return points_.front().size_bytes;
}

// First bin i (points i-1..i) with points_[i].probability >= u and a non-zero width.
std::size_t FlowSizeCdf::bin_for(double u) const {
  auto k = static_cast<std::size_t>(u * kGuide);
  std::size_t bin = guide_[std::min(k, kGuide)];
  while (bin + 1 < points_.size() &&
         (points_[bin].probability < u || points_[bin].probability <= points_[bin - 1].probability)) {
    ++bin;
  }
  return bin;
}

double FlowSizeCdf::quantile(double u) const {
  if (points_.size() == 1) return points_[0].size_bytes;
  u = std::clamp(u, 0.0, 1.0);
  const std::size_t i = bin_for(u);
  const CdfPoint& lo = points_[i - 1];
  const CdfPoint& hi = points_[i];
  const double width = hi.probability - lo.probability;
  if (width <= 0) return hi.size_bytes;
  return lo.size_bytes + (hi.size_bytes - lo.size_bytes) * ((u - lo.probability) / width);
}

double FlowSizeCdf::cdf_at(double x) const {
  if (x < points_.front().size_bytes) return 0.0;
  if (x >= points_.back().size_bytes) return 1.0;
  auto it =
      std::upper_bound(points_.begin(), points_.end(), x, [](double v, const CdfPoint& p) { return v < p.size_bytes; });
  const CdfPoint& hi = *it;
  const CdfPoint& lo = *(it - 1);
  if (hi.size_bytes <= lo.size_bytes) return hi.probability;
  return lo.probability + (hi.probability - lo.probability) * ((x - lo.size_bytes) / (hi.size_bytes - lo.size_bytes));
}

std::uint64_t FlowSizeCdf::sample(Rng& rng, double scale) const {
  const double size = std::round(quantile(rng.uniform()) * scale);
  return size < 1 ? 1 : static_cast<std::uint64_t>(size);
}

std::string resolve_cdf_path(const std::string& name_or_path) { return find_data_file(name_or_path, kFlowSizeCdfs); }

}  // namespace xtk
