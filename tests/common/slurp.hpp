// A whole file as text, for tests that compare what a tool wrote; a missing
// file fails the test with the library's message rather than reading as "".
#pragma once

#include <filesystem>
#include <string>

#include "formats/csv_file.hpp"

namespace xtk::testing {

inline std::string slurp(const std::filesystem::path& path) { return read_text_file(path.string(), "the test's file"); }

}  // namespace xtk::testing
