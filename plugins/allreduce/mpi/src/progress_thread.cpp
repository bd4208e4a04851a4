#include "progress_thread.hpp"

namespace strata::allreduce_mpi {

std::shared_ptr<ProgressThread> ProgressThread::shared() {
  static std::weak_ptr<ProgressThread> current;
  std::shared_ptr<ProgressThread> thread = current.lock();
  if (!thread) {
    thread = std::make_shared<ProgressThread>();
    current = thread;
  }
  return thread;
}

}  // namespace strata::allreduce_mpi
