// Cuts text into lines for the line-oriented readers (schedules, the CSV files
// of a run directory). A file or stream is read a block at a time (64 KiB,
// doubled for a longer line), so a file of millions of lines costs one block
// of memory; std::getline took more instructions per line than the rest of a
// schedule row's parsing. Lines end in "\n" or "\r\n"; the last one may have
// no newline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace xtk {

class LineReader {
 public:
  // Text already in memory: the lines are views into it.
  explicit LineReader(std::string_view text);
  // A file descriptor, read until read() returns 0 (not closed here); `source`
  // names it in a read error.
  LineReader(int fd, std::string source);
  // A stream, read until it ends.
  LineReader(std::istream& in, std::string source);

  // The next line without its "\n" or "\r\n", or false at the end. The view
  // lives until the next call. A read error throws InputError naming the
  // source and the last line read.
  bool next(std::string_view& line);
  // Lines returned so far: the number of the last one.
  std::uint64_t line() const { return line_; }

 private:
  void refill();  // the unread rest to the block's front, and more after it
  std::size_t read_some(char* to, std::size_t room);

  int fd_ = -1;
  std::istream* in_ = nullptr;
  std::string source_;
  std::vector<char> block_;
  std::string_view unread_;  // in the text, or in block_
  bool ended_ = false;
  std::uint64_t line_ = 0;
};

}  // namespace xtk
