// A small persistent pool for the optimizer step: the threads are started once per optimizer
// instance and wait between steps, so a step pays a wake-up rather than a thread start.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::offload {

// How many threads a pool gets is strata/cpu_threads.hpp's rule (shared with strata_amp).

class ThreadPool {
 public:
  // `threads` counts the calling thread: a pool of 1 runs everything on the caller.
  explicit ThreadPool(unsigned threads);
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool();

  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }

  // Calls task(i) once for every i in [0, count), spread over the workers and the caller, and
  // returns when all calls have returned. `task` must not throw. One run at a time per pool.
  void run(std::size_t count, const std::function<void(std::size_t)>& task);

 private:
  void work();
  void stop_workers();
  void drain();  // takes task indices until none are left

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // one run() at a time
  std::mutex mutex_;      // guards everything below except next_
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(std::size_t)>* task_ = nullptr;
  std::size_t count_ = 0;
  std::atomic<std::size_t> next_{0};
  std::size_t busy_ = 0;          // workers still in the current run
  std::uint64_t generation_ = 0;  // bumped by every run(); workers wait for a new one
  bool stop_ = false;
};

}  // namespace strata::offload
