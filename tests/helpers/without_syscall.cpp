// Runs a command as an older kernel would: one system call answers ENOSYS,
// through a seccomp filter (libseccomp) that the command and its threads
// inherit. Tests use it to run xtk's tools on the paths they take where a call
// is missing (epoll_pwait2 before Linux 5.11).
//
//   xtk-test-without-syscall NAME COMMAND [ARG...]
#include <seccomp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s SYSCALL COMMAND [ARG...]\n", argv[0]);
    return 2;
  }
  const int call = seccomp_syscall_resolve_name(argv[1]);
  if (call == __NR_SCMP_ERROR) {
    std::fprintf(stderr, "%s: unknown system call '%s'\n", argv[0], argv[1]);
    return 2;
  }
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
  if (filter == nullptr || seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), call, 0) != 0 ||
      seccomp_load(filter) != 0) {
    std::fprintf(stderr, "%s: cannot load a seccomp filter for %s\n", argv[0], argv[1]);
    return 1;
  }
  seccomp_release(filter);
  execvp(argv[2], argv + 2);
  std::fprintf(stderr, "%s: %s: %s\n", argv[0], argv[2], std::strerror(errno));
  return 1;
}
