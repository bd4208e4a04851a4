// Signals for strata-run's poll loops (both backends): SIGINT/SIGTERM/SIGHUP/SIGCHLD reach the loop
// through a pipe (the self-pipe trick), so the handler only writes the signal and where it came
// from, and the loop does everything else, between two poll() calls. The handlers have SA_RESTART:
// a SIGCHLD does not cut short a blocking write (the loops' messages to stderr); poll() and read()
// still return EINTR, which the loops handle.
#pragma once

#include <string>
#include <vector>

namespace strata::run {

struct CaughtSignal {
  int number = 0;
  // Sent by a process with kill() or sigqueue() (si_code SI_USER, SI_QUEUE, SI_TKILL...: a
  // scheduler's SIGTERM, `kill PID`). false: sent by the kernel (SI_KERNEL), as a terminal's ^C,
  // ^\ or hangup is, to the terminal's whole foreground process group at once.
  bool from_process = false;
};

// Installs the handlers; returns the pipe's read end (non-blocking) to poll, or -1 if no pipe could
// be made (then the signals keep their defaults).
int install_signal_pipe();

// The signals that arrived since the last call, in order (SIGCHLD included).
std::vector<CaughtSignal> take_signals();

// "SIGINT", or "signal 42" for one without a name.
std::string signal_name(int sig);

}  // namespace strata::run
