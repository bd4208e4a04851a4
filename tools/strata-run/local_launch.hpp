// Starting one process: fork/exec, stdout and stderr on pipes, stdin /dev/null (a local rank), a
// pipe (a launch agent, which gets the secret that way) or strata-run's own (mpirun, which passes
// it on to rank 0; from a terminal only while mpirun is in the terminal's foreground process group,
// see launcher_process.hpp). The child gets a signal (SIGKILL unless told) if strata-run dies
// (PR_SET_PDEATHSIG). A rank or agent gets its own process group: strata-run can signal it and
// everything it started, and a terminal's Ctrl-C does not reach it directly (strata-run stops the
// ranks instead, once). mpirun stays in strata-run's group.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace strata::run {

struct ChildProcess {
  pid_t pid = -1;   // also its process group id, with SpawnOptions::own_process_group
  int out_fd = -1;  // read ends, non-blocking, close-on-exec
  int err_fd = -1;
  int in_fd = -1;   // write end of its stdin with StdinFrom::pipe, else -1
};

enum class StdinFrom { null, pipe, inherit };

struct SpawnOptions {
  StdinFrom stdin_from = StdinFrom::null;
  int death_signal = SIGKILL;
  bool own_process_group = true;  // false: stays in strata-run's (mpirun)
};

// argv[0] is looked up in PATH. envp is the whole environment ("NAME=VALUE"). When exec fails the
// child writes "strata-run: cannot run 'PROG': <reason>" to its stderr pipe and exits 127.
ChildProcess spawn_process(const std::vector<std::string>& argv, const std::vector<std::string>& envp,
                           const SpawnOptions& options);

}  // namespace strata::run
