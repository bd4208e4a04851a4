// One background thread that runs the plugin's non-blocking collectives as blocking MPI calls, one
// at a time and in submission order (as Horovod does).
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

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

namespace strata::allreduce_mpi {

class ProgressThread {
 public:
  ProgressThread();
  // Runs what is still queued, then joins.
  ~ProgressThread();
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // The process's thread, started on first use and joined when the last holder lets go.
  // Not thread-safe (plugin create/destroy aren't either).
  static std::shared_ptr<ProgressThread> shared();

  // Queues `work`; the future becomes ready when it has run and rethrows what it threw.
  std::future<void> submit(std::function<void()> work);
  // Blocks (without spinning) until everything submitted so far has run. Cheap when idle.
  void drain();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable work_ready_;  // queue non-empty or stopping
  std::condition_variable idle_;        // queue empty and nothing running
  std::deque<std::packaged_task<void()>> queue_;
  bool running_ = false;  // a task has been taken off the queue and not finished
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace strata::allreduce_mpi
