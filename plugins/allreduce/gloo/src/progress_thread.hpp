// One background thread per instance that runs its non-blocking collectives, one at a time and in
// submission order: the shared ordered work thread (plugins/common,
// strata_common/work_thread.hpp), named "gloo progress". Gloo contexts are not thread-safe: a
// blocking call drains this thread first and then runs on the caller's (entry.cpp), so a context
// is used by one thread at a time and every rank issues the same sequence. The thread blocks
// SIGPIPE (sigpipe.hpp). Instances have separate contexts and connections, so each can have its
// own thread.
#pragma once

#include "sigpipe.hpp"

#include <strata_common/work_thread.hpp>

namespace strata::allreduce_gloo {

class ProgressThread : public common::WorkThread {
 public:
  ProgressThread() : WorkThread("gloo progress", &SigpipeBlocked::block_in_this_thread) {}
};

}  // namespace strata::allreduce_gloo
