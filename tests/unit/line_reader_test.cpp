#include "formats/line_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"

namespace xtk {
namespace {

std::vector<std::string> all_lines(LineReader& reader) {
  std::vector<std::string> lines;
  std::string_view line;
  while (reader.next(line)) lines.emplace_back(line);
  return lines;
}

// Lines across the block's edges, CRLF and LF endings, an empty line, a line
// four blocks long, and a last line with no newline.
std::string mixed_text(std::vector<std::string>& expected) {
  std::string text;
  for (int i = 0; i < 20'000; ++i) {
    expected.push_back("row " + std::to_string(i));
    text += expected.back() + (i % 3 == 0 ? "\r\n" : "\n");
  }
  expected.emplace_back();
  text += "\n";
  expected.emplace_back(4 * 65'536 + 7, 'x');
  text += expected.back() + "\r\n";
  expected.emplace_back("last");
  text += "last";
  return text;
}

TEST(LineReader, TextInMemory) {
  std::vector<std::string> expected;
  const std::string text = mixed_text(expected);
  LineReader reader{std::string_view(text)};
  EXPECT_EQ(all_lines(reader), expected);
  EXPECT_EQ(reader.line(), expected.size());
  std::string_view line;
  EXPECT_FALSE(reader.next(line));  // and stays at the end
}

TEST(LineReader, Stream) {
  std::vector<std::string> expected;
  std::istringstream in(mixed_text(expected));
  LineReader reader(in, "s.csv");
  EXPECT_EQ(all_lines(reader), expected);
  EXPECT_EQ(reader.line(), expected.size());
}

// A pipe hands the bytes over in short reads that end mid-line.
TEST(LineReader, PipeWrittenInSmallPieces) {
  std::vector<std::string> expected;
  const std::string text = mixed_text(expected);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::thread writer([&] {
    for (std::size_t at = 0; at < text.size(); at += 1'000) {
      const std::size_t n = std::min<std::size_t>(1'000, text.size() - at);
      ASSERT_EQ(write(fds[1], text.data() + at, n), static_cast<ssize_t>(n));
    }
    close(fds[1]);
  });
  LineReader reader(fds[0], "<pipe>");
  EXPECT_EQ(all_lines(reader), expected);
  writer.join();
  close(fds[0]);
}

TEST(LineReader, EmptyInputHasNoLines) {
  LineReader text{std::string_view()};
  std::istringstream in;
  LineReader stream(in, "e.csv");
  EXPECT_TRUE(all_lines(text).empty());
  EXPECT_TRUE(all_lines(stream).empty());
  EXPECT_EQ(stream.line(), 0u);
}

TEST(LineReader, ReadErrorNamesTheSource) {
  const int fd = open("/", O_RDONLY | O_DIRECTORY);  // read() on a directory: EISDIR
  ASSERT_GE(fd, 0);
  LineReader reader(fd, "/");
  std::string_view line;
  try {
    reader.next(line);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/: read error: Is a directory"), std::string::npos) << e.what();
  }
  close(fd);
}

}  // namespace
}  // namespace xtk
