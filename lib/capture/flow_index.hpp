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
  static constexpr std::uint32_t kNone = UINT32_MAX;
  // A lookup ahead of find_or_add() in stages, so that a batch's cache misses
  // overlap: first the slot of the key's hash is loaded, then the index it
  // holds read (unchecked: it may be another key's) to load what the caller
  // keeps per index.
  void prefetch_slot(std::uint64_t hash) const { __builtin_prefetch(&slots_[hash & mask_]); }
  std::uint32_t candidate(std::uint64_t hash) const {
    const std::uint64_t slot = slots_[hash & mask_];
    return slot == 0 ? kNone : static_cast<std::uint32_t>(slot & 0xffffffffULL) - 1;
  }
  void prefetch_key(std::uint32_t index) const { __builtin_prefetch(&keys_[index]); }
  // The key's index; `added` tells whether it was new. `hash` is key.hash().
  std::uint32_t find_or_add(const FlowKey& key, std::uint64_t hash, bool& added);
  std::uint32_t find_or_add(const FlowKey& key, bool& added) { return find_or_add(key, key.hash(), added); }
  const FlowKey& key(std::uint32_t index) const { return keys_[index]; }
  std::size_t size() const { return keys_.size(); }

 private:
  void grow();
  std::vector<FlowKey> keys_;
  std::vector<std::uint64_t> slots_;  // (hash high 32 bits << 32) | (index + 1); 0 = empty
  std::uint64_t mask_;
  std::uint32_t last_ = kNone;
};

}  // namespace xtk::capture
