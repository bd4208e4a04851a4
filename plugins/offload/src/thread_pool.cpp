#include "thread_pool.hpp"

namespace strata::offload {

ThreadPool::ThreadPool(unsigned threads) {
  workers_.reserve(threads > 1 ? threads - 1 : 0);
  try {
    for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  } catch (...) {
    stop_workers();  // the ones already started
    throw;
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
}

void ThreadPool::run(std::size_t count, const std::function<void(std::size_t)>& task) {
  if (workers_.empty() || count <= 1) {
    for (std::size_t i = 0; i < count; ++i) task(i);
    return;
  }
  const std::lock_guard<std::mutex> one_run(run_mutex_);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    count_ = count;
    next_.store(0, std::memory_order_relaxed);
    busy_ = workers_.size();
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::unique_lock<std::mutex> lock(mutex_);
  // Waiting for every worker, not just for the last index, keeps `task` alive while any worker
  // could still read it.
  done_.wait(lock, [this] { return busy_ == 0; });
  task_ = nullptr;
}

void ThreadPool::drain() {
  for (std::size_t i = next_.fetch_add(1); i < count_; i = next_.fetch_add(1)) (*task_)(i);
}

void ThreadPool::work() {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain();
    const std::lock_guard<std::mutex> lock(mutex_);
    if (--busy_ == 0) done_.notify_one();
  }
}

}  // namespace strata::offload
