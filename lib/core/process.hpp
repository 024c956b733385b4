// Child processes: run a command and collect its output, or start one in the
// background and stop it. Only processes started here are ever signalled, and
// only by their own PID.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xtk {

struct CommandResult {
  int exit_status = -1;  // exit code, or 128 + signal; -1 when it timed out
  std::string output;    // stdout and stderr together
  bool ok() const { return exit_status == 0; }
};

// Runs argv[0] (looked up in PATH) to completion or until `timeout`, when it is
// killed. Throws Error only when it cannot be started.
CommandResult run_command(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(30));

// As run_command, but a non-zero exit is an Error quoting the command and its output.
std::string run_checked(const std::vector<std::string>& argv,
                        std::chrono::milliseconds timeout = std::chrono::seconds(30));

std::string shell_quote(const std::vector<std::string>& argv);

struct ChildOptions {
  // Its own process group: a terminal's Ctrl-C then reaches only us, and we
  // pass it on as we choose (an ssh client would die of it and drop its remote).
  bool own_group = false;
  // Its stdin is a socket that only we hold: signal() writes the signal's
  // name ("INT") and a newline to it instead of kill()ing the child, which
  // forwards it (ssh to a remote wrapper); our end closing is end of file.
  bool signals_on_stdin = false;
  // Its stdin, stdout and stderr are one socket that only we hold, for a
  // line-by-line exchange (write_line, read_line); the log is not written.
  bool talk = false;
};

// A background process. Its output goes to `log_path` (or /dev/null when empty),
// its stdin is /dev/null unless options say otherwise.
// The destructor stops it (SIGTERM, then SIGKILL) if it is still running.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path = "", ChildOptions options = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Exit status (as CommandResult) once it has ended; nullopt while it runs after `timeout`.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  void signal(int signo);  // no-op once reaped
  // SIGTERM, then SIGKILL after `grace`; returns the exit status. With
  // signals_on_stdin, SIGKILL goes down the socket too, then the socket is
  // closed, and the child itself is killed only if it has not ended 2 s later.
  int stop(std::chrono::milliseconds grace = std::chrono::seconds(2));
  bool running();
  // With `talk`: a line to its stdin, and its next line of output without the
  // newline (nullopt when none came within `timeout`, or its output ended).
  void write_line(std::string_view line);
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);
  const std::string& unread() const { return unread_; }  // output read after the last whole line

 private:
  void close_signals();
  pid_t pid_ = -1;
  int signals_fd_ = -1;  // our end of the child's stdin, with signals_on_stdin
  int talk_fd_ = -1;     // our end of its stdin and output, with talk
  std::string unread_;
  std::optional<int> status_;
};

}  // namespace xtk
