#include "core/error.hpp"

#include <fmt/format.h>

namespace xtk {

InputError::InputError(std::string_view source, std::uint64_t line, std::string_view what)
    : Error(line > 0 ? fmt::format("{}:{}: {}", source, line, what) : fmt::format("{}: {}", source, what)),
      source_(source),
      line_(line) {}

}  // namespace xtk
