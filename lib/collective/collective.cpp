#include "collective/collective.hpp"

#include <fmt/format.h>

#include "collective/pattern.hpp"
#include "core/error.hpp"

namespace xtk::collective {

// One line per collective (lib/collective/collectives/).
const Collective& all_reduce();
const Collective& all_gather();
const Collective& broadcast();
const Collective& reduce_scatter();
const Collective& reduce();
const Collective& all_to_all();
const Collective& send_recv();
const Collective& send();
const Collective& recv();

const std::vector<const Collective*>& all_collectives() {
  static const std::vector<const Collective*> list{&all_reduce(), &all_gather(), &broadcast(), &reduce_scatter(),
                                                   &reduce(),     &all_to_all(), &send_recv()};
  return list;
}

const std::vector<const Collective*>& traced_only_collectives() {
  static const std::vector<const Collective*> list{&send(), &recv()};
  return list;
}

namespace {

// "all-gather" -> "allgather": nccl-tests writes all_gather, alltoall and sendrecv.
std::string squeezed(std::string_view name) {
  std::string out;
  for (const char c : name) {
    if (c != '-' && c != '_') out += c;
  }
  return out;
}

}  // namespace

const Collective& find_collective(std::string_view name) {
  std::string_view bare = name;
  if (bare.ends_with("_perf")) bare.remove_suffix(5);
  for (const auto* c : all_collectives()) {
    if (squeezed(c->name()) == squeezed(bare)) return *c;
  }
  throw UsageError(fmt::format("--collective {}: not a collective (use one of {})", name, collective_names()));
}

const Collective& find_traced_collective(std::string_view name) {
  for (const auto* c : traced_only_collectives()) {
    if (c->name() == name) return *c;
  }
  return find_collective(name);
}

std::string collective_names() {
  std::string out;
  for (const auto* c : all_collectives()) out += (out.empty() ? "" : ", ") + std::string(c->name());
  return out;
}

std::uint64_t count_wrong_output(const Collective& collective, const DataPattern& pattern, const Counts& counts,
                                 std::uint32_t rank, std::uint32_t nranks, std::uint32_t root, const void* output,
                                 std::size_t element) {
  std::uint64_t wrong = 0;
  for (const auto& e : collective.expected(counts, rank, nranks, root)) {
    const char* at = static_cast<const char*>(output) + e.at * element;
    wrong += e.from_rank ? pattern.count_wrong_input(*e.from_rank, e.first, e.count, at)
                         : pattern.count_wrong_reduced(e.first, e.count, at);
  }
  return wrong;
}

std::size_t aligned_share(std::size_t count, std::uint32_t nranks, std::size_t element) {
  const std::size_t per_16_bytes = element < 16 ? 16 / element : 1;
  return count / nranks / per_16_bytes * per_16_bytes;
}

void Collective::nccl(const NcclCall& /*call*/) const {
  throw Error(fmt::format("{}: this xtk-collective was built without NCCL", name()));
}

void Collective::gloo(const GlooCall& /*call*/) const {
  const auto why = gloo_lacks();
  throw UsageError(fmt::format("{}: {}", name(), why.empty() ? "this xtk-collective was built without Gloo" : why));
}

}  // namespace xtk::collective
