// Message sizes and bandwidths the nccl-tests way.
//
// Sizes: a bare K, M or G suffix is binary, as in nccl-tests and PyTorch
// (-b 32M = 33554432 B, bucket 25M = 26214400 B); explicit units keep xtk's
// meaning (32MB = 32000000 B, 32MiB = 33554432 B).
//
// Bandwidths: algbw = bytes / time, in GB/s (1e9 bytes/s) as nccl-tests
// prints it; each collective's busbw factor is in its own file
// (lib/collective/collectives/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace xtk::collective {

// nccl-tests' -b/-e/-f/-i: from min to max, times `factor` when it is above 1,
// else plus `step` bytes. Sizes are rounded down to whole elements of
// `element_bytes`, sizes of zero elements are dropped, duplicates removed.
std::vector<std::uint64_t> sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor,
                                       std::uint64_t step_bytes, std::size_t element_bytes);

// 2(n-1)/n: the share of the data each rank sends (and receives) in an all-reduce.
double all_reduce_bus_factor(std::uint64_t nranks);
double algbw_gbyte_s(std::uint64_t bytes, double seconds);  // GB/s

}  // namespace xtk::collective
