#include "progress_thread.hpp"

#include "sigpipe.hpp"

#include <pthread.h>

#include <utility>

namespace strata::allreduce_gloo {

ProgressThread::ProgressThread()
    : thread_([this] {
        // Its name is what the timeline and debuggers show for its track.
        pthread_setname_np(pthread_self(), "gloo progress");
        SigpipeBlocked::block_in_this_thread();
        loop();
      }) {}

ProgressThread::~ProgressThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_one();
  thread_.join();
}

std::future<void> ProgressThread::submit(std::function<void()> work) {
  std::packaged_task<void()> task(std::move(work));
  std::future<void> done = task.get_future();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(task));
  }
  work_ready_.notify_one();
  return done;
}

void ProgressThread::drain() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !running_; });
}

void ProgressThread::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [this] { return !queue_.empty() || stopping_; });
    if (queue_.empty()) return;  // stopping, and everything queued has run
    std::packaged_task<void()> task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    task();  // exceptions are stored in the task's future
    lock.lock();
    running_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace strata::allreduce_gloo
