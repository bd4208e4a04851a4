// Starting one process: fork/exec in its own process group, stdout and stderr on pipes, stdin
// either /dev/null (a local rank) or a pipe (a launch agent, which gets the secret that way).
// The child gets SIGKILL if strata-run dies (PR_SET_PDEATHSIG). Its own process group lets strata-run signal a rank and everything it started, and keeps a
// terminal's Ctrl-C from reaching the ranks directly: strata-run forwards it instead.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace strata::run {

struct ChildProcess {
  pid_t pid = -1;   // also its process group id
  int out_fd = -1;  // read ends, non-blocking, close-on-exec
  int err_fd = -1;
  int in_fd = -1;   // write end of its stdin when with_stdin, else -1
};

// argv[0] is looked up in PATH. envp is the whole environment ("NAME=VALUE"). When exec fails the
// child writes "strata-run: cannot run 'PROG': <reason>" to its stderr pipe and exits 127.
ChildProcess spawn_process(const std::vector<std::string>& argv,
                           const std::vector<std::string>& envp, bool with_stdin);

}  // namespace strata::run
