// A collective as nccl-tests defines it: how a sweep size becomes each rank's
// buffers, its algbw and busbw, what each rank must hold afterwards (the data
// check), and its call into each library. Each collective is one file in
// lib/collective/collectives/ plus one line in collective.cpp's list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collective/dtype.hpp"

namespace xtk::collective {

// Elements per rank for one size (nccl-tests' getCollByteCount).
struct Counts {
  std::size_t send = 0, recv = 0;
  std::size_t param = 0;  // the count the library call takes
  // In place, the input starts at the receive buffer + rank x send_in_place,
  // the output at + rank x recv_in_place (elements).
  std::size_t send_in_place = 0, recv_in_place = 0;
  std::size_t span() const { return send > recv ? send : recv; }  // of the buffers, nccl-tests' "size"
};

// A run of a rank's output after the collective: a copy of rank `from_rank`'s
// input from element `first` on, or (from_rank unset) the reduction of every
// rank's input from element `first` on.
struct Expected {
  std::size_t at = 0, count = 0;
  std::optional<std::uint32_t> from_rank;
  std::size_t first = 0;
};

class DataPattern;
struct NcclCall;  // nccl_context.hpp
struct GlooCall;  // gloo_call.hpp

class Collective {
 public:
  virtual ~Collective() = default;
  virtual std::string_view name() const = 0;  // "all-gather"
  virtual bool reduces() const { return false; }
  virtual bool rooted() const { return false; }
  // A send or a recv of a traced job: the call's root is the peer.
  virtual bool point_to_point() const { return false; }

  // `count` elements of the sweep's size on `nranks` ranks.
  virtual Counts counts(std::size_t count, std::uint32_t nranks, std::size_t element) const = 0;
  // nccl-tests' getBw: algbw = algbw_elements x element size / time, busbw = algbw x bus_factor.
  virtual std::size_t algbw_elements(const Counts& c, std::uint32_t nranks) const = 0;
  virtual double bus_factor(std::uint32_t nranks) const = 0;
  virtual std::string_view bus_factor_formula() const = 0;  // "(n-1)/n", for the JSON
  virtual std::vector<Expected> expected(const Counts& c, std::uint32_t rank, std::uint32_t nranks,
                                         std::uint32_t root) const = 0;
  // False where the libraries have no in-place form (one buffer is read and
  // written at once): the in-place run is timed, as nccl-tests does, and not checked.
  virtual bool in_place_checked() const { return true; }

  // Why the Gloo backend cannot run it; empty when it can.
  virtual std::string gloo_lacks() const { return {}; }
  // One call on one rank. The base versions throw: not built in, or gloo_lacks().
  virtual void nccl(const NcclCall& call) const;
  virtual void gloo(const GlooCall& call) const;
};

// Every collective, in nccl-tests' order.
const std::vector<const Collective*>& all_collectives();
// Those a replay adds from a trace (send, recv): not swept.
const std::vector<const Collective*>& traced_only_collectives();
// A collective of either list by its name ("all-reduce", "recv"). Throws UsageError.
const Collective& find_traced_collective(std::string_view name);
// By name ("all-gather"), or nccl-tests' ("all_gather", "all_gather_perf"). Throws UsageError.
const Collective& find_collective(std::string_view name);
std::string collective_names();  // "all-reduce, all-gather, ..."

// Elements of rank `rank`'s output (counts.recv at `output`) that are not what
// the collective should have left there, filled from `pattern`.
std::uint64_t count_wrong_output(const Collective& collective, const DataPattern& pattern, const Counts& counts,
                                 std::uint32_t rank, std::uint32_t nranks, std::uint32_t root, const void* output,
                                 std::size_t element);

// nccl-tests' per-rank share of a size: count / nranks, rounded down to a
// multiple of 16 bytes.
std::size_t aligned_share(std::size_t count, std::uint32_t nranks, std::size_t element);

}  // namespace xtk::collective
