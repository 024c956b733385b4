// Data check of a collective, as nccl-tests does it: every rank fills its
// input from a formula, and every output element is compared with the
// reduction of all ranks' inputs (all-reduce, reduce-scatter, reduce) or with
// one rank's input (all-gather, broadcast, all-to-all, send-recv).
//
// Element i of rank r is g((h(i) + s·r) mod M): h mixes the index so a
// misplaced chunk is caught, and g gives small integers whose sums, products,
// maxima and minima every type (half and bfloat16 included) holds exactly for
// the rank counts used. The expected value then depends only on h(i) mod M, so
// a table of M values checks any size in one pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collective/dtype.hpp"

namespace xtk::collective {

class DataPattern {
 public:
  DataPattern(DataType type, ReduceOp op, std::uint32_t nranks);

  // Rank `rank`'s input: `count` elements written to `out`.
  void fill(std::uint32_t rank, std::size_t count, void* out) const;
  // How many of `count` elements at `data` are not the all-reduce result.
  std::uint64_t count_wrong(std::size_t count, const void* data) const { return count_wrong_reduced(0, count, data); }
  // ... not the reduction of elements first, first + 1, ... of every rank's input.
  std::uint64_t count_wrong_reduced(std::size_t first, std::size_t count, const void* data) const;
  // ... not elements first, first + 1, ... of rank `rank`'s input.
  std::uint64_t count_wrong_input(std::uint32_t rank, std::size_t first, std::size_t count, const void* data) const;
  // The expected result of element i, as a double (for messages and tests).
  double expected(std::size_t i) const;

 private:
  std::uint32_t residue(std::size_t i) const;      // h(i) mod M
  std::uint32_t offset(std::uint32_t rank) const;  // s·r mod M
  // values[(k + offset) mod M] for each residue k, as the type's bits.
  std::vector<std::uint64_t> raw_table(const std::vector<double>& values, std::uint32_t offset) const;
  std::uint64_t count_wrong(const std::vector<double>& values, std::uint32_t offset, std::size_t first,
                            std::size_t count, const void* data) const;
  DataType type_;
  ReduceOp op_;
  std::uint32_t nranks_;
  std::uint32_t modulus_, stride_;
  std::uint64_t fastmod_ = 0;     // 2^64 / M, rounded up
  std::vector<double> inputs_;    // g(j), j < M
  std::vector<double> expected_;  // the result for residue k, rounded to the type
  double tolerance_;              // relative, floating types only
};

}  // namespace xtk::collective
