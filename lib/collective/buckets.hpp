// PyTorch DDP's gradient buckets as its Reducer rebuilds them after the first
// iteration (compute_bucket_assignment_by_size over the gradient-ready order):
// walking the tensors in backward order, one open bucket per type; a tensor
// joins its type's bucket, and the bucket closes as soon as it holds at least
// the cap - 1 MiB for each type's first bucket (so communication starts
// early), then --bucket (25 MiB). A tensor is never split. Buckets keep the
// order they closed in (buckets still open at the end follow), and are
// all-reduced in that order, each once it and every earlier one are full.
#pragma once

#include <cstdint>
#include <vector>

#include "collective/profile.hpp"
#include "collective/train_engine.hpp"

namespace xtk::collective {

struct BucketCaps {
  std::uint64_t first_bytes = 1ULL << 20;
  std::uint64_t bytes = 25ULL << 20;
  // Both caps multiplied by `factor` (at least 1 byte): buckets keep their
  // share of the gradients when the gradients are scaled.
  BucketCaps scaled(double factor) const;
};

struct BucketPlan {
  TrainPlan plan;
  // Share of the backward compute to issue before launching bucket b (after
  // launching b - 1); they sum to 1.
  std::vector<double> compute_before;
};

// Buckets start on 256-byte boundaries of the flat gradient buffer (GPU alignment).
BucketPlan assign_buckets(const ModelProfile& profile, const BucketCaps& caps);

}  // namespace xtk::collective
