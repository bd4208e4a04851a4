// One background thread per instance that runs all its collectives, one at a time and in
// submission order (blocking calls wait for theirs). Gloo contexts are not thread-safe: with every
// Gloo call of an instance after create() on this thread, its context is used by one thread and
// every rank issues the same sequence. The thread blocks SIGPIPE (sigpipe.hpp).
// Instances have separate contexts and connections, so each can have its own thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace strata::allreduce_gloo {

class ProgressThread {
 public:
  ProgressThread();
  // Runs what is still queued, then joins.
  ~ProgressThread();
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // Queues `work`; the future becomes ready when it has run and rethrows what it threw.
  std::future<void> submit(std::function<void()> work);
  // Blocks (without spinning) until everything submitted so far has run.
  void drain();

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable work_ready_;  // queue non-empty or stopping
  std::condition_variable idle_;        // queue empty and nothing running
  std::deque<std::packaged_task<void()>> queue_;
  bool running_ = false;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace strata::allreduce_gloo
