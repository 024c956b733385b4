// Several xtk-collective ranks as child processes, for the integration
// tests: each rank's command line, its log, and bounded waits.
#pragma once

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/process.hpp"

namespace xtk::collective::testing {

// A port of its own per job, so tests (and parallel ctest runs) do not collide;
// below the ephemeral range (32768-60999) that Gloo's own listeners take.
inline std::uint16_t next_port() {
  static int n = 0;
  return static_cast<std::uint16_t>(20000 + (::getpid() % 600) * 20 + (n++ % 20));
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The JSON document `--json` prints, from a rank's log (its stdout and stderr).
inline nlohmann::json json_in(const std::string& log) {
  const auto first = log.find('{'), last = log.rfind('}');
  if (first == std::string::npos || last == std::string::npos || last < first) return nullptr;
  return nlohmann::json::parse(log.substr(first, last - first + 1));
}

class Ranks {
 public:
  // Starts `n` ranks; `argv(rank)` is rank `rank`'s full command line.
  Ranks(std::size_t n, const std::filesystem::path& dir,
        const std::function<std::vector<std::string>(std::size_t)>& argv)
      : dir_(dir) {
    for (std::size_t r = 0; r < n; ++r) {
      logs_.push_back((dir / ("rank" + std::to_string(r) + ".log")).string());
      processes_.push_back(std::make_unique<ChildProcess>(argv(r), logs_.back()));
    }
  }

  ChildProcess& process(std::size_t rank) { return *processes_[rank]; }
  std::string log(std::size_t rank) const { return read_text(logs_[rank]); }

  // Exit statuses of `ranks`, waiting for all of them together up to `limit`;
  // nullopt for one still running then.
  std::vector<std::optional<int>> wait(const std::vector<std::size_t>& ranks, std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    std::vector<std::optional<int>> out;
    for (auto r : ranks) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      out.push_back(processes_[r]->wait(std::max(left, std::chrono::milliseconds(1))));
    }
    return out;
  }
  std::vector<std::optional<int>> wait_all(std::chrono::milliseconds limit) {
    std::vector<std::size_t> all;
    for (std::size_t r = 0; r < processes_.size(); ++r) all.push_back(r);
    return wait(all, limit);
  }
  std::string logs() const {
    std::string out;
    for (std::size_t r = 0; r < logs_.size(); ++r) out += "--- rank " + std::to_string(r) + "\n" + log(r);
    return out;
  }

 private:
  std::filesystem::path dir_;
  std::vector<std::string> logs_;
  std::vector<std::unique_ptr<ChildProcess>> processes_;
};

}  // namespace xtk::collective::testing
