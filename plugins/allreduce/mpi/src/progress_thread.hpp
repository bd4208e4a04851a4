// One background thread that runs the plugin's non-blocking collectives as blocking MPI calls, one
// at a time and in submission order (as Horovod does): the shared ordered work thread
// (plugins/common, strata_common/work_thread.hpp), named "mpi progress".
//
// Why: Open MPI 4.1's MPI_I* collectives (libnbc) are 20-50 % slower than the blocking ones from
// 1 MiB up. Running blocking calls on a thread keeps the overlap with the caller and the speed of
// the blocking path. FIFO order keeps every rank's collective sequence identical, and since only
// this thread calls MPI while work is queued, MPI access stays serialised (MPI_THREAD_SERIALIZED).
//
// The thread is shared by every instance in the process (see shared()): with one thread per
// instance two threads could each block in a collective of their own communicator, in opposite
// orders on two ranks, and deadlock.
#pragma once

#include <strata_common/work_thread.hpp>

#include <memory>

namespace strata::allreduce_mpi {

class ProgressThread : public common::WorkThread {
 public:
  ProgressThread() : WorkThread("mpi progress") {}

  // The process's thread, started on first use and joined when the last holder lets go.
  // Not thread-safe (plugin create/destroy aren't either).
  static std::shared_ptr<ProgressThread> shared();
};

}  // namespace strata::allreduce_mpi
