// Signals for strata-run's poll loops (both backends): SIGINT/SIGTERM/SIGHUP/SIGCHLD reach the loop
// through a pipe (the self-pipe trick), so the handler only writes the signal number and the loop
// does everything else, between two poll() calls.
#pragma once

#include <string>
#include <vector>

namespace strata::run {

// Installs the handlers; returns the pipe's read end (non-blocking) to poll, or -1 if no pipe could
// be made (then the signals keep their defaults).
int install_signal_pipe();

// The signals that arrived since the last call, in order (SIGCHLD included).
std::vector<int> take_signals();

// "SIGINT", or "signal 42" for one without a name.
std::string signal_name(int sig);

}  // namespace strata::run
