// The gloo backend's process supervision: start every rank, prefix its output, and end the whole
// job at the first failure. strata-run opens no listening socket: it talks to its ranks (and to
// the launch agents of remote ranks) only through pipes.
#pragma once

#include "job_outcome.hpp"

#include <string>
#include <vector>

namespace strata::run {

struct RankTask {
  int rank = 0;
  std::string host;        // as given, for messages
  std::string host_ranks;  // "ranks 2-3", for the unreachable-host message
  bool remote = false;     // started through the launch agent
  std::vector<std::string> argv;
  std::vector<std::string> envp;
  std::string stdin_line;  // remote: the secret and '\n', the first line of the agent's stdin
};

struct SupervisorOptions {
  int connect_timeout_s = 30;  // a remote rank's marker must appear within this
  int grace_ms = 3000;         // SIGTERM, then SIGKILL after this
  bool rank_prefix = true;     // "[R] " before each line (false: --no-rank-prefix)
};

// Runs the ranks to the end. exit_code is 0 when every rank exited 0; else the first failure's
// (128 + signal for a signal, 255 for an unreachable host, 128 + signal when strata-run itself got
// SIGINT/SIGTERM/SIGHUP), with the failed rank or the unreachable host beside it.
JobOutcome supervise(const std::vector<RankTask>& tasks, const SupervisorOptions& options);

}  // namespace strata::run
