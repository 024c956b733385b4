// Plain-text input shared by every reader.
#pragma once

#include <string_view>

namespace xtk {

// A UTF-8 byte-order mark, as spreadsheets save CSV, is not part of a file's
// first line: without this, a line that looks right would not match.
inline std::string_view without_byte_order_mark(std::string_view first_line) {
  constexpr std::string_view kMark = "\xEF\xBB\xBF";
  if (first_line.starts_with(kMark)) first_line.remove_prefix(kMark.size());
  return first_line;
}

}  // namespace xtk
