// How one run of a job ended, as both backends report it: the exit status strata-run returns and,
// for --max-restarts, what failed first (which rank, or which host could not be reached) and
// whether strata-run itself was told to stop (then nothing is restarted).
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace strata::run {

struct JobOutcome {
  int exit_code = 0;  // the first failure's (see supervise and run_launcher)
  std::optional<int> failed_rank;          // the first rank that failed, when known
  std::optional<std::string> lost_host;    // a host whose launch agent could not start its ranks
  bool stopped_by_signal = false;          // strata-run got SIGINT/SIGTERM/SIGHUP
  std::string cause;                       // the failure's one-line message, for the restart log
  // When the first failure was seen (not when the run ended: ending the other ranks takes seconds).
  std::optional<std::chrono::steady_clock::time_point> failed_at;
};

}  // namespace strata::run
