// strata_common/work_thread.hpp — an ordered work queue on one background thread, for the tree's
// comm plugins that run their collectives (or a library's calls that must not be made from two
// threads) off the caller's thread, one at a time and in submission order. FIFO order keeps every
// rank's sequence of collectives identical; with all of a communicator's calls on this thread, the
// communicator is used by one thread only. Whether one thread serves a whole process or one
// instance is the plugin's choice (a std::shared_ptr held by every instance, or a member).
// Library strata_common_work_thread (plugins/common, never installed); POSIX threads (the thread
// is named with pthread_setname_np).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace strata::common {

class WorkThread {
 public:
  // Starts the thread. `name` (at most 15 characters on Linux; longer names are not applied) is
  // what the timeline and debuggers show for its track. `on_start`, when set, runs first on the
  // new thread (e.g. to block signals there) and must not throw.
  explicit WorkThread(const std::string& name, std::function<void()> on_start = {});
  // Runs what is still queued, then joins. Not from the work thread itself, and not while another
  // thread may still submit().
  ~WorkThread();
  WorkThread(const WorkThread&) = delete;
  WorkThread& operator=(const WorkThread&) = delete;

  // Queues `work`; the future becomes ready when it has run and rethrows what it threw. `work` is
  // destroyed on the work thread. Thread-safe.
  std::future<void> submit(std::function<void()> work);

  // Blocks (without spinning) until everything submitted so far has run. Cheap when idle.
  // Thread-safe, but not from the work thread itself (it would wait for itself).
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

}  // namespace strata::common
