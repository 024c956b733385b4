#include "capture/flow_index.hpp"

namespace xtk::capture {

FlowIndex::FlowIndex() : slots_(1024, 0), mask_(1023) {}

std::uint32_t FlowIndex::find_or_add(const FlowKey& key, std::uint64_t h, bool& added) {
  added = false;
  if (last_ != kNone && keys_[last_] == key) return last_;
  const std::uint64_t tag = h & 0xffffffff00000000ULL;
  for (std::uint64_t i = h & mask_;; i = (i + 1) & mask_) {
    const std::uint64_t slot = slots_[i];
    if (slot == 0) break;
    if ((slot & 0xffffffff00000000ULL) == tag) {
      const auto index = static_cast<std::uint32_t>(slot & 0xffffffffULL) - 1;
      if (keys_[index] == key) return last_ = index;
    }
  }
  added = true;
  const auto index = static_cast<std::uint32_t>(keys_.size());
  keys_.push_back(key);
  if (keys_.size() * 2 > slots_.size()) {
    grow();  // rehashes the new key too
  } else {
    std::uint64_t i = h & mask_;
    while (slots_[i] != 0) i = (i + 1) & mask_;
    slots_[i] = tag | (index + 1ULL);
  }
  return last_ = index;
}

void FlowIndex::grow() {
  slots_.assign(slots_.size() * 2, 0);
  mask_ = slots_.size() - 1;
  for (std::uint32_t index = 0; index < keys_.size(); ++index) {
    const std::uint64_t h = keys_[index].hash();
    std::uint64_t i = h & mask_;
    while (slots_[i] != 0) i = (i + 1) & mask_;
    slots_[i] = (h & 0xffffffff00000000ULL) | (index + 1ULL);
  }
}

}  // namespace xtk::capture
