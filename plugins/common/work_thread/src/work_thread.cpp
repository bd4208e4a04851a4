#include <strata_common/work_thread.hpp>

#include <pthread.h>

namespace strata::common {

WorkThread::WorkThread(const std::string& name, std::function<void()> on_start)
    : thread_([this, name, on_start = std::move(on_start)] {
        pthread_setname_np(pthread_self(), name.c_str());
        if (on_start) on_start();
        loop();
      }) {}

WorkThread::~WorkThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_one();
  thread_.join();
}

std::future<void> WorkThread::submit(std::function<void()> work) {
  std::packaged_task<void()> task(std::move(work));
  std::future<void> done = task.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
  }
  work_ready_.notify_one();
  return done;
}

void WorkThread::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !running_; });
}

void WorkThread::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
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

}  // namespace strata::common
