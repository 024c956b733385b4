#include "collective/buckets.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace xtk::collective {
namespace {

constexpr std::size_t kAlignment = 256;

struct Open {
  Bucket bucket;
  std::size_t closed = 0;  // buckets of this type closed so far: picks the cap
  bool empty = true;
};

std::uint64_t scale_bytes(std::uint64_t bytes, double factor) {
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(static_cast<double>(bytes) * factor)));
}

}  // namespace

BucketCaps BucketCaps::scaled(double factor) const {
  return {scale_bytes(first_bytes, factor), scale_bytes(bytes, factor)};
}

BucketPlan assign_buckets(const ModelProfile& profile, const BucketCaps& caps) {
  std::vector<Bucket> buckets;
  std::map<DataType, Open> open;
  const auto close = [&](Open& o) {
    buckets.push_back(o.bucket);
    ++o.closed;
    o.empty = true;
    o.bucket = Bucket{};
  };
  for (std::size_t i = 0; i < profile.tensors.size(); ++i) {
    const Tensor& t = profile.tensors[i];
    Open& o = open[t.type];
    if (o.empty) {
      o.bucket.type = t.type;
      o.bucket.first_tensor = i;
      o.empty = false;
    }
    o.bucket.bytes += t.numel * data_type_size(t.type);
    o.bucket.last_tensor = i;
    const std::uint64_t cap = o.closed == 0 ? caps.first_bytes : caps.bytes;
    if (o.bucket.bytes >= cap) close(o);
  }
  for (auto& [type, o] : open) {
    if (!o.empty) close(o);
  }
  BucketPlan result;
  std::size_t offset = 0;
  for (auto& b : buckets) {
    b.offset_bytes = offset;
    offset += (b.bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  result.plan.buckets = buckets;
  result.plan.gradient_bytes = offset;

  double total = 0;
  for (const auto& t : profile.tensors) total += t.compute_weight;
  // Bucket b goes out once the backward pass reached the last tensor of b and of every earlier bucket.
  std::size_t reached = 0;  // tensors whose compute was issued
  for (const auto& b : buckets) {
    const std::size_t ready_after = std::max(reached, b.last_tensor + 1);
    double weight = 0;
    for (std::size_t i = reached; i < ready_after; ++i) weight += profile.tensors[i].compute_weight;
    result.compute_before.push_back(total > 0 ? weight / total : 0.0);
    reached = ready_after;
  }
  if (total <= 0 && !result.compute_before.empty()) {
    result.compute_before.back() = 1.0;  // no weights at all: the whole backward before the last launch
  }
  return result;
}

}  // namespace xtk::collective
