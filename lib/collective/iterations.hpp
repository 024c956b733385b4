// The iterations file (docs/run-directory.md): one row per rank per training
// iteration, streamed to disk and handed to the kernel at least every second,
// so a run that is killed loses at most its last second.
//
//   # xtk-iterations
//   # format_version=1
//   # key=value ...                     (model, ranks, backend, ...)
//   rank,iter,start_ns,end_ns,iter_us,comm_us,bytes
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace xtk::collective {

struct IterationRecord {
  std::uint32_t rank = 0;
  std::uint64_t iter = 0;
  std::int64_t start_ns = 0, end_ns = 0;  // CLOCK_REALTIME
  double iter_us = 0;                     // CLOCK_MONOTONIC
  double comm_us = 0;
  std::uint64_t bytes = 0;  // bytes this rank sent in the iteration's all-reduces
};

class IterationWriter {
 public:
  IterationWriter(const std::string& path, const std::vector<std::pair<std::string, std::string>>& header);
  ~IterationWriter();
  IterationWriter(const IterationWriter&) = delete;
  IterationWriter& operator=(const IterationWriter&) = delete;

  void write(const IterationRecord& record);
  void close();

 private:
  void flush();
  std::string path_;
  std::FILE* file_ = nullptr;
  std::string buffer_;
  std::int64_t last_flush_ns_ = 0;
};

}  // namespace xtk::collective
