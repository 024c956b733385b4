#include "core/file_lock.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "core/error.hpp"

namespace xtk {
namespace {

std::string lock_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()) + ".lock")).string();
}

// Each FileLock opens the file anew, so two in one process contend as two
// processes would (flock belongs to the open file, not the process).
TEST(FileLock, ABusyLockIsRefusedWithTheCallersMessageUntilReleased) {
  const std::string path = lock_path("xtk-busy");
  {
    const FileLock held(path, FileLock::Wait::no);
    try {
      const FileLock second(path, FileLock::Wait::no, "the directory is in use");
      ADD_FAILURE() << "a held lock was taken again";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "the directory is in use");
    }
  }
  EXPECT_NO_THROW(FileLock(path, FileLock::Wait::no));
  std::filesystem::remove(path);
}

TEST(FileLock, AWaitingLockIsTakenWhenTheHolderReleasesIt) {
  const std::string path = lock_path("xtk-wait");
  std::atomic<bool> taken{false};
  std::thread waiter;
  {
    const FileLock held(path, FileLock::Wait::yes);
    waiter = std::thread([&] {
      const FileLock mine(path, FileLock::Wait::yes);
      taken = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(taken) << "the lock was taken while held";
  }
  waiter.join();
  EXPECT_TRUE(taken);
  std::filesystem::remove(path);
}

TEST(FileLock, AnUnopenableFileIsNamed) {
  try {
    const FileLock lock("/nonexistent-dir/x.lock", FileLock::Wait::no);
    ADD_FAILURE() << "locked a file in a missing directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.lock: cannot open the lock file"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace xtk
