// The message of the xtk::Error that `f` throws, for tests of error texts;
// "(no error)" when it throws none.
#pragma once

#include <functional>
#include <string>

#include "core/error.hpp"

namespace xtk::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace xtk::testing
