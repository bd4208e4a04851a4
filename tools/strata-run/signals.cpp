#include "signals.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace strata::run {
namespace {

int g_signal_pipe[2] = {-1, -1};
pid_t g_owner = 0;  // the process that installed the handlers: strata-run itself

// One byte per signal: the number (below 65) and, in the top bit, whether a process sent it.
constexpr int kFromProcess = 0x80;

void on_signal(int sig, siginfo_t* info, void*) {
  const int saved = errno;
  // A child between fork() and its exec still has this handler (local_launch resets it, but a
  // SIGTERM sent to a rank that fails at start-up can come first): it must not write into
  // strata-run's pipe, where it would read as a signal to strata-run. It takes the default action.
  if (getpid() != g_owner) {
    signal(sig, SIG_DFL);
    raise(sig);
    errno = saved;
    return;
  }
  // si_code <= 0 is every code a process sets (SI_USER 0, SI_QUEUE, SI_TKILL... are negative); the
  // kernel's own, SI_KERNEL and the SIGCHLD codes, are positive.
  const bool from_process = info != nullptr && info->si_code <= 0;
  const unsigned char byte = static_cast<unsigned char>(sig | (from_process ? kFromProcess : 0));
  [[maybe_unused]] const ssize_t ignored = write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

int install_signal_pipe() {
  g_owner = getpid();
  if (g_signal_pipe[0] < 0 && pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
  struct sigaction action{};
  action.sa_sigaction = on_signal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (const int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &action, nullptr);
  return g_signal_pipe[0];
}

std::vector<CaughtSignal> take_signals() {
  std::vector<CaughtSignal> signals;
  unsigned char byte = 0;
  while (g_signal_pipe[0] >= 0 && read(g_signal_pipe[0], &byte, 1) == 1) {
    signals.push_back({byte & ~kFromProcess, (byte & kFromProcess) != 0});
  }
  return signals;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace strata::run
