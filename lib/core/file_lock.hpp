// An exclusive flock(2) on a file, held for the object's lifetime: how
// separate xtk processes take turns at something one machine has once (an
// experiment directory, a global sysctl).
#pragma once

#include <string>

namespace xtk {

class FileLock {
 public:
  enum class Wait { no, yes };
  // Creates `path` if needed. With Wait::no, throws Error(`busy`) when another
  // process holds the lock; with Wait::yes, blocks until it is released.
  FileLock(const std::string& path, Wait wait, const std::string& busy = "");
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace xtk
