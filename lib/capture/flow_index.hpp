// FlowKey -> dense index (0, 1, 2, ... in first-seen order), the hot lookup
// of trace analysis: open addressing with the hash beside each slot, and the
// last hit remembered because consecutive packets are often of one flow.
#pragma once

#include <cstdint>
#include <vector>

#include "capture/flow_key.hpp"

namespace xtk::capture {

class FlowIndex {
 public:
  FlowIndex();
  // Starts loading the key's slot into the cache, ahead of find_or_add().
  void prefetch(const FlowKey& key) const { __builtin_prefetch(&slots_[key.hash() & mask_]); }
  // The key's index; `added` tells whether it was new.
  std::uint32_t find_or_add(const FlowKey& key, bool& added);
  const FlowKey& key(std::uint32_t index) const { return keys_[index]; }
  std::size_t size() const { return keys_.size(); }

 private:
  void grow();
  std::vector<FlowKey> keys_;
  std::vector<std::uint64_t> slots_;  // (hash high 32 bits << 32) | (index + 1); 0 = empty
  std::uint64_t mask_;
  std::uint32_t last_ = UINT32_MAX;
};

}  // namespace xtk::capture
