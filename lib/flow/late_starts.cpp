#include "flow/late_starts.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace xtk {

LatenessParts LatenessParts::of(const StartTimes& t) {
  LatenessParts p;
  const std::int64_t available = std::max(t.due, t.handed);  // the worker could start it from here
  const std::int64_t taken = std::max(available, t.taken);
  p.ns[static_cast<std::size_t>(LateCause::feeder)] = available - t.due;
  p.ns[static_cast<std::size_t>(LateCause::wake_up)] = std::clamp<std::int64_t>(t.asleep, 0, taken - available);
  p.ns[static_cast<std::size_t>(LateCause::worker)] =
      taken - available - p.ns[static_cast<std::size_t>(LateCause::wake_up)];
  p.ns[static_cast<std::size_t>(LateCause::connection)] = std::max<std::int64_t>(0, t.started - taken);
  return p;
}

LateCause LatenessParts::longest() const {
  return static_cast<LateCause>(std::max_element(ns.begin(), ns.end()) - ns.begin());
}

void LateStarts::add(const StartTimes& t) {
  const std::int64_t lateness = t.started - t.due;
  if (lateness <= kLateStartNs) return;
  const LateCause cause = LatenessParts::of(t).longest();
  ++flows_[static_cast<std::size_t>(cause)];
  if (lateness > max_ns_) {
    max_ns_ = lateness;
    max_cause_ = cause;
  }
}

std::uint64_t LateStarts::total() const {
  std::uint64_t sum = 0;
  for (const auto n : flows_) sum += n;
  return sum;
}

std::string LateStarts::describe() const {
  std::string text;
  for (std::size_t i = 0; i < flows_.size(); ++i) {
    text += fmt::format("{}{} {}", i > 0 ? ", " : "", kLateCauseNames[i], flows_[i]);
  }
  if (total() > 0) {
    text += fmt::format("; latest {:.1f} us: {}", static_cast<double>(max_ns_) / 1e3,
                        kLateCauseNames[static_cast<std::size_t>(max_cause_)]);
  }
  return text;
}

nlohmann::json LateStarts::to_json() const {
  nlohmann::json j;
  for (std::size_t i = 0; i < flows_.size(); ++i) j[kLateCauseNames[i]] = flows_[i];
  j["latest_us"] = static_cast<double>(max_ns_) / 1e3;
  j["latest_cause"] = total() > 0 ? nlohmann::json(kLateCauseNames[static_cast<std::size_t>(max_cause_)]) : nullptr;
  return j;
}

}  // namespace xtk
