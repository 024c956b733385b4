#include "core/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "core/error.hpp"

extern char** environ;

namespace xtk {
namespace {

int decode(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return -1;
}

std::vector<char*> c_args(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  out.reserve(argv.size() + 1);
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

// Starts argv with stdout and stderr on `out_fd`; stdin from `in_fd`, or
// /dev/null when it is -1; in a process group of its own with `own_group`.
pid_t spawn(const std::vector<std::string>& argv, int out_fd, int in_fd = -1, bool own_group = false) {
  if (argv.empty()) throw Error("spawn: empty command");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (in_fd < 0) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  } else {
    posix_spawn_file_actions_adddup2(&actions, in_fd, STDIN_FILENO);
  }
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  if (own_group) {
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
  }
  pid_t pid = -1;
  auto args = c_args(argv);
  const int rc = posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error(fmt::format("cannot start '{}': {}", argv[0], std::strerror(rc)));
  return pid;
}

enum class Read { more, ended, timed_out };

// Appends what `fd` has to `out`, waiting until `deadline` at most: more
// (something read, or a signal came), ended (end of file or an error), or timed_out.
Read read_some(int fd, std::chrono::steady_clock::time_point deadline, std::string& out) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return Read::timed_out;
  pollfd p{fd, POLLIN, 0};
  const int ready = poll(&p, 1, static_cast<int>(left.count()));
  if (ready <= 0) return Read::more;  // a signal, or the deadline: the next call says which
  char buffer[4096];
  const ssize_t n = read(fd, buffer, sizeof buffer);
  if (n > 0) {
    out.append(buffer, static_cast<std::size_t>(n));
    return Read::more;
  }
  return n < 0 && errno == EINTR ? Read::more : Read::ended;
}

}  // namespace

std::string shell_quote(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    if (!a.empty() && a.find_first_of(" \t\n'\"\\$`*?[]{}()<>|&;#~") == std::string::npos) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw Error(fmt::format("pipe: {}", std::strerror(errno)));
  pid_t pid = -1;
  try {
    pid = spawn(argv, pipe_fds[1]);
  } catch (...) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    throw;
  }
  close(pipe_fds[1]);
  CommandResult result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Read r = Read::more;
  while (r == Read::more) r = read_some(pipe_fds[0], deadline, result.output);
  const bool timed_out = r == Read::timed_out;
  close(pipe_fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int raw = 0;
  while (waitpid(pid, &raw, 0) < 0 && errno == EINTR) {
  }
  result.exit_status = timed_out ? -1 : decode(raw);
  return result;
}

std::string run_checked(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  auto result = run_command(argv, timeout);
  if (!result.ok()) {
    throw Error(fmt::format("'{}' {}: {}", shell_quote(argv),
                            result.exit_status < 0 ? "timed out" : fmt::format("exited {}", result.exit_status),
                            result.output.empty() ? "(no output)" : result.output));
  }
  return result.output;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& log_path, ChildOptions options) {
  if (options.talk) {
    int sockets[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
      throw Error(fmt::format("socketpair: {}", std::strerror(errno)));
    }
    try {
      pid_ = spawn(argv, sockets[1], sockets[1], options.own_group);
    } catch (...) {
      close(sockets[0]);
      close(sockets[1]);
      throw;
    }
    close(sockets[1]);
    talk_fd_ = sockets[0];
    return;
  }
  const char* path = log_path.empty() ? "/dev/null" : log_path.c_str();
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(fmt::format("{}: cannot open log: {}", path, std::strerror(errno)));
  // Close-on-exec on both ends: no other child holds our end, so its closing
  // (we stop, or die) is end of file for this child alone.
  int sockets[2] = {-1, -1};
  if (options.signals_on_stdin && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
    close(fd);
    throw Error(fmt::format("socketpair: {}", std::strerror(errno)));
  }
  try {
    pid_ = spawn(argv, fd, sockets[1], options.own_group);
  } catch (...) {
    close(fd);
    for (const int s : sockets) {
      if (s >= 0) close(s);
    }
    throw;
  }
  close(fd);
  if (sockets[1] >= 0) close(sockets[1]);
  signals_fd_ = sockets[0];
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !status_) stop(std::chrono::milliseconds(500));
  close_signals();
}

void ChildProcess::close_signals() {
  if (signals_fd_ >= 0) close(signals_fd_);
  signals_fd_ = -1;
  if (talk_fd_ >= 0) close(talk_fd_);
  talk_fd_ = -1;
}

void ChildProcess::write_line(std::string_view line) {
  if (talk_fd_ < 0) throw Error("write_line: the child was not started to talk");
  const std::string text = fmt::format("{}\n", line);
  // MSG_NOSIGNAL: a child that has gone must not kill us with SIGPIPE.
  if (send(talk_fd_, text.data(), text.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(text.size())) {
    throw Error(fmt::format("cannot write to pid {}: {}", pid_, std::strerror(errno)));
  }
}

std::optional<std::string> ChildProcess::read_line(std::chrono::milliseconds timeout) {
  if (talk_fd_ < 0) throw Error("read_line: the child was not started to talk");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (const auto end = unread_.find('\n'); end != std::string::npos) {
      std::string line = unread_.substr(0, end);
      unread_.erase(0, end + 1);
      return line;
    }
    if (read_some(talk_fd_, deadline, unread_) != Read::more) return std::nullopt;
  }
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int raw = 0;
    const pid_t r = waitpid(pid_, &raw, WNOHANG);
    if (r == pid_) {
      status_ = decode(raw);
      return status_;
    }
    if (r < 0 && errno != EINTR) {
      status_ = -1;
      return status_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool ChildProcess::running() { return !wait(std::chrono::milliseconds(0)).has_value(); }

void ChildProcess::signal(int signo) {
  if (pid_ <= 0 || !running()) return;
  if (signals_fd_ < 0) {
    kill(pid_, signo);
    return;
  }
  // MSG_NOSIGNAL: a child that closed its stdin must not kill us with SIGPIPE.
  const std::string line = fmt::format("{}\n", sigabbrev_np(signo));
  if (send(signals_fd_, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    kill(pid_, signo);  // it reads no more signals: the local child is all we can reach
  }
}

int ChildProcess::stop(std::chrono::milliseconds grace) {
  signal(SIGTERM);
  if (auto status = wait(grace)) return *status;
  if (signals_fd_ >= 0) {
    signal(SIGKILL);
    close_signals();
    if (auto status = wait(std::chrono::seconds(2))) return *status;
  }
  signal(SIGKILL);
  return wait(std::chrono::seconds(5)).value_or(-1);
}

}  // namespace xtk
