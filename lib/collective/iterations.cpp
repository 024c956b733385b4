#include "collective/iterations.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <iterator>

#include "core/clock.hpp"
#include "core/error.hpp"

namespace xtk::collective {

IterationWriter::IterationWriter(const std::string& path,
                                 const std::vector<std::pair<std::string, std::string>>& header)
    : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr)
    throw Error(fmt::format("{}: cannot create the iterations file: {}", path, std::strerror(errno)));
  buffer_ = "# xtk-iterations\n# format_version=1\n";
  for (const auto& [key, value] : header) fmt::format_to(std::back_inserter(buffer_), "# {}={}\n", key, value);
  buffer_ += "rank,iter,start_ns,end_ns,iter_us,comm_us,bytes\n";
  flush();
}

IterationWriter::~IterationWriter() {
  try {
    close();
  } catch (const Error& e) {
    std::fprintf(stderr, "xtk-collective: %s\n", e.what());
  }
}

void IterationWriter::write(const IterationRecord& r) {
  fmt::format_to(std::back_inserter(buffer_), "{},{},{},{},{:.3f},{:.3f},{}\n", r.rank, r.iter, r.start_ns, r.end_ns,
                 r.iter_us, r.comm_us, r.bytes);
  if (monotonic_ns() - last_flush_ns_ >= 1'000'000'000) flush();
}

void IterationWriter::flush() {
  if (file_ == nullptr) return;
  if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
    throw Error(fmt::format("{}: write failed: {}", path_, std::strerror(errno)));
  }
  buffer_.clear();
  std::fflush(file_);
  last_flush_ns_ = monotonic_ns();
}

void IterationWriter::close() {
  if (file_ == nullptr) return;
  flush();
  const bool failed = std::fclose(file_) != 0;
  file_ = nullptr;
  if (failed) throw Error(fmt::format("{}: cannot close: {}", path_, std::strerror(errno)));
}

}  // namespace xtk::collective
