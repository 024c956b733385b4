#include "collective/gloo_call.hpp"

#include <fmt/format.h>

#include <exception>

#include "collective/job.hpp"
#include "core/units.hpp"

namespace xtk::collective {

void run_gloo(const Collective& collective, const GlooCall& call, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    throw CollectiveError(fmt::format("Gloo {} of {} failed: {}", collective.name(),
                                      format_bytes(static_cast<double>(call.counts.span() * call.element)), e.what()));
  }
}

}  // namespace xtk::collective
