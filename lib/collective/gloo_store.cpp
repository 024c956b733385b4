#include "collective/gloo_store.hpp"

#include <fmt/format.h>

#include "core/clock.hpp"

namespace xtk::collective {

void ControlStore::set(const std::string& key, const std::vector<char>& data) {
  job_.control().set(prefix_ + key, std::string(data.begin(), data.end()));
}

std::string ControlStore::fetch(const std::string& key, std::int64_t deadline_ns) {
  auto value = job_.control().get(prefix_ + key, deadline_ns);
  if (!value) {
    throw CollectiveError(fmt::format("Gloo rendezvous: key '{}' was not published in time (timeout {:.0f} s)", key,
                                      static_cast<double>(job_.timeout_ns()) / 1e9));
  }
  return *value;
}

std::vector<char> ControlStore::get(const std::string& key) {
  const auto value = fetch(key, job_.deadline());
  return {value.begin(), value.end()};
}

void ControlStore::wait(const std::vector<std::string>& keys) {
  const auto deadline = job_.deadline();
  for (const auto& key : keys) fetch(key, deadline);
}

void ControlStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  const auto deadline = monotonic_ns() + std::min<std::int64_t>(job_.timeout_ns(), timeout.count() * 1'000'000);
  for (const auto& key : keys) fetch(key, deadline);
}

}  // namespace xtk::collective
