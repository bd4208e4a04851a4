// Starting one process: fork/exec in its own process group, stdout and stderr on pipes, stdin
// /dev/null (a local rank), a pipe (a launch agent, which gets the secret that way) or strata-run's
// own (mpirun, which passes it on to rank 0). The child gets a signal (SIGKILL unless told) if
// strata-run dies (PR_SET_PDEATHSIG). Its own process group lets strata-run signal a rank and
// everything it started, and keeps a terminal's Ctrl-C from reaching the child directly:
// strata-run forwards it instead, once.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace strata::run {

struct ChildProcess {
  pid_t pid = -1;   // also its process group id
  int out_fd = -1;  // read ends, non-blocking, close-on-exec
  int err_fd = -1;
  int in_fd = -1;   // write end of its stdin with StdinFrom::pipe, else -1
};

enum class StdinFrom { null, pipe, inherit };

// argv[0] is looked up in PATH. envp is the whole environment ("NAME=VALUE"). When exec fails the
// child writes "strata-run: cannot run 'PROG': <reason>" to its stderr pipe and exits 127.
ChildProcess spawn_process(const std::vector<std::string>& argv,
                           const std::vector<std::string>& envp, StdinFrom stdin_from,
                           int death_signal = SIGKILL);

}  // namespace strata::run
