#include "collective/profile.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/data_files.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "core/units.hpp"

namespace xtk::collective {
namespace {

constexpr const char* kMagic = "# xtk-model-profile";
constexpr const char* kColumns = "name,numel,dtype";
constexpr std::uint64_t kMostNumel = std::uint64_t{1} << 48;

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, ',');) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

double positive_number(const std::string& text, const char* what, const std::string& file, std::uint64_t line,
                       bool zero_ok) {
  double value = 0;
  try {
    value = parse_number(text);
  } catch (const UsageError&) {
    throw InputError(file, line, fmt::format("{} '{}' is not a number", what, text));
  }
  if (value < 0 || (!zero_ok && value == 0)) {
    throw InputError(file, line, fmt::format("{} {} must be {}", what, text, zero_ok ? ">= 0" : "above 0"));
  }
  return value;
}

}  // namespace

std::uint64_t ModelProfile::parameters() const {
  std::uint64_t n = 0;
  for (const auto& t : tensors) n += t.numel;
  return n;
}

std::uint64_t ModelProfile::bytes() const {
  std::uint64_t n = 0;
  for (const auto& t : tensors) n += t.numel * data_type_size(t.type);
  return n;
}

ModelProfile scale_profile(const ModelProfile& profile, double factor) {
  if (!(factor > 0)) throw UsageError(fmt::format("a size scale must be above 0, not {}", factor));
  ModelProfile scaled = profile;
  for (auto& t : scaled.tensors) {
    const double numel = static_cast<double>(t.numel) * factor;
    if (numel >= 0x1p63) {
      throw UsageError(fmt::format("tensor '{}' of {} elements x {} is past 2^63 elements", t.name, t.numel, factor));
    }
    t.numel = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(numel)));
  }
  return scaled;
}

ModelProfile read_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open the model profile", path));
  return parse_profile(in, path);
}

ModelProfile parse_profile(std::istream& in, const std::string& path) {
  ModelProfile p;
  p.source = path;
  p.model = std::filesystem::path(path).stem().string();
  std::string line;
  std::uint64_t number = 0;
  bool columns_seen = false, version_seen = false;
  std::set<std::string> names;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1) {
      if (without_byte_order_mark(line) != kMagic) {
        throw InputError(path, 1, fmt::format("not an xtk model profile: the first line must be '{}'", kMagic));
      }
      continue;
    }
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (columns_seen) continue;
      auto text = line.substr(1);
      text.erase(0, text.find_first_not_of(' '));
      const auto equals = text.find('=');
      if (equals == std::string::npos || equals == 0) continue;  // a comment
      const std::string key = text.substr(0, equals), value = text.substr(equals + 1);
      if (p.header.contains(key)) throw InputError(path, number, fmt::format("header key '{}' is given twice", key));
      p.header[key] = value;
      if (key == "format_version") {
        if (value != "1") {
          throw InputError(path, number,
                           fmt::format("format_version {} is not supported (this xtk reads version 1)", value));
        }
        version_seen = true;
      } else if (key == "model") {
        p.model = value;
      } else if (key == "compute_ms") {
        p.compute_ms = positive_number(value, "compute_ms", path, number, false);
      } else if (key == "forward_fraction") {
        p.forward_fraction = positive_number(value, "forward_fraction", path, number, true);
        if (p.forward_fraction >= 1) throw InputError(path, number, "forward_fraction must be below 1");
      }
      continue;
    }
    if (!columns_seen) {
      if (!version_seen) throw InputError(path, number, "no '# format_version=N' line before the column line");
      if (line == kColumns) {
        p.has_compute_weights = false;
      } else if (line == std::string(kColumns) + ",compute_weight") {
        p.has_compute_weights = true;
      } else {
        throw InputError(path, number, fmt::format("expected the column line '{}[,compute_weight]'", kColumns));
      }
      columns_seen = true;
      continue;
    }
    const auto fields = split_fields(line);
    const std::size_t expected = p.has_compute_weights ? 4 : 3;
    if (fields.size() != expected) {
      throw InputError(path, number, fmt::format("{} fields, expected {}", fields.size(), expected));
    }
    Tensor t;
    t.name = fields[0];
    if (t.name.empty() || t.name.find_first_of(" \t#") != std::string::npos) {
      throw InputError(path, number, fmt::format("tensor name '{}' is empty or has spaces or '#'", t.name));
    }
    if (!names.insert(t.name).second)
      throw InputError(path, number, fmt::format("tensor '{}' is listed twice", t.name));
    const auto& numel = fields[1];
    auto [ptr, ec] = std::from_chars(numel.data(), numel.data() + numel.size(), t.numel);
    // 2^48 elements (a petabyte of fp32) bounds every sum over a profile's tensors.
    if (numel.empty() || ec != std::errc() || ptr != numel.data() + numel.size() || t.numel == 0 ||
        t.numel > kMostNumel) {
      throw InputError(path, number, fmt::format("numel '{}' is not a positive integer up to 2^48", numel));
    }
    try {
      t.type = parse_data_type(fields[2]);
    } catch (const UsageError& e) {
      throw InputError(path, number, fmt::format("dtype: {}", e.what()));
    }
    t.compute_weight = p.has_compute_weights ? positive_number(fields[3], "compute_weight", path, number, true)
                                             : static_cast<double>(t.numel);
    p.tensors.push_back(std::move(t));
  }
  if (number == 0) throw InputError(path, 0, "empty file: not an xtk model profile");
  if (!columns_seen)
    throw InputError(path, number, fmt::format("no column line: the header must end with '{}'", kColumns));
  if (p.tensors.empty()) throw InputError(path, number, "no tensors: a profile lists at least one");
  return p;
}

std::string find_profile(const std::string& name_or_path) { return find_data_file(name_or_path, kModelProfiles); }

}  // namespace xtk::collective
