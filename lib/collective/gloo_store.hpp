// gloo::rendezvous::Store over xtk's rendezvous (Debian's Gloo has file,
// hash, prefix and Redis stores, but no TCP store): Gloo's ranks publish and
// find each other's addresses through rank 0.
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <string>
#include <vector>

#include "collective/job.hpp"

namespace xtk::collective {

class ControlStore : public gloo::rendezvous::Store {
 public:
  ControlStore(Job& job, std::string prefix) : job_(job), prefix_(std::move(prefix)) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  std::string fetch(const std::string& key, std::int64_t deadline_ns);
  Job& job_;
  std::string prefix_;
};

}  // namespace xtk::collective
