// Errors shared by every xtk library and tool.
//
// Two kinds matter to users: a usage error (a bad flag or argument; exit 2)
// and everything else at run time (bad input file, I/O; exit 1). Input errors
// carry the place they came from ("file:line: what to fix").
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace xtk {

// A runtime failure: exit status 1.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad flag or argument: exit status 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// Bad content in an input file or stream, located by source name and line.
class InputError : public Error {
 public:
  InputError(std::string_view source, std::uint64_t line, std::string_view what);
  const std::string& source() const { return source_; }
  std::uint64_t line() const { return line_; }

 private:
  std::string source_;
  std::uint64_t line_;
};

inline constexpr int kExitRuntime = 1;
inline constexpr int kExitUsage = 2;

}  // namespace xtk
