// Gloo's TCP pairs write to sockets without MSG_NOSIGNAL, so a write to a peer that has just died
// raises SIGPIPE, whose default action ends the process without a word; we want the EPIPE, which
// Gloo turns into an IoException and the plugin into STRATA_ERR_COMM. Changing the process's
// disposition is the host's business, so the plugin blocks SIGPIPE only in threads that call Gloo:
// permanently on its own threads (the progress thread; Gloo's device loop and the store's threads
// inherit the mask of create()'s thread while SigpipeBlocked holds), and for the duration of
// create() on the host's thread, discarding a SIGPIPE raised meanwhile before the mask is restored
// (a write-raised SIGPIPE is directed at the writing thread, so it stays pending there).
#pragma once

#include <signal.h>
#include <time.h>

namespace strata::allreduce_gloo {

class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
  }
  ~SigpipeBlocked() {
    if (!was_pending_) {
      sigset_t pending;
      sigpending(&pending);
      const timespec now{0, 0};
      if (sigismember(&pending, SIGPIPE) == 1) sigtimedwait(&pipe_, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

  // For threads of the plugin's own: block for good.
  static void block_in_this_thread() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  }

 private:
  sigset_t pipe_;
  sigset_t previous_;
  bool was_pending_ = false;
};

}  // namespace strata::allreduce_gloo
