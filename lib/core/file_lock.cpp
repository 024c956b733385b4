#include "core/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace xtk {

FileLock::FileLock(const std::string& path, Wait wait, const std::string& busy) {
  fd_ = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(fmt::format("{}: cannot open the lock file: {}", path, std::strerror(errno)));
  int rc = 0;
  do {
    rc = ::flock(fd_, LOCK_EX | (wait == Wait::no ? LOCK_NB : 0));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int error = errno;
    ::close(fd_);
    if (error == EWOULDBLOCK && !busy.empty()) throw Error(busy);
    throw Error(fmt::format("{}: cannot lock: {}", path, std::strerror(error)));
  }
}

FileLock::~FileLock() { ::close(fd_); }

}  // namespace xtk
