# Writes OUT (a header defining XTK_GIT_REVISION: the source tree's commit,
# "-dirty" when it has uncommitted changes, "unknown" outside a git checkout),
# touching it only when the revision changed. Run at every build.
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD OUTPUT_VARIABLE rev
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE failed)
if(failed OR rev STREQUAL "")
  set(rev "unknown")
else()
  execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no OUTPUT_VARIABLE changes ERROR_QUIET)
  if(NOT changes STREQUAL "")
    set(rev "${rev}-dirty")
  endif()
endif()
set(text "#pragma once\n#define XTK_GIT_REVISION \"${rev}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
