#include "signals.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace strata::run {
namespace {

int g_signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t ignored = write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

}  // namespace

int install_signal_pipe() {
  if (g_signal_pipe[0] < 0 && pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
  struct sigaction action{};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  for (const int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &action, nullptr);
  return g_signal_pipe[0];
}

std::vector<int> take_signals() {
  std::vector<int> signals;
  unsigned char sig = 0;
  while (g_signal_pipe[0] >= 0 && read(g_signal_pipe[0], &sig, 1) == 1) signals.push_back(sig);
  return signals;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace strata::run
