// strata_common_work_thread (plugins/common/work_thread): the ordered work queue on one thread
// that the MPI and Gloo plugins run their collectives on, on its own.
#include <gtest/gtest.h>
#include <strata/plugin.hpp>
#include <strata_common/work_thread.hpp>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace strata::common {
namespace {

// What a callable threw, as sdk::fail's message; "" when it did not throw.
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const sdk::Error& e) {
    return e.what();
  }
  return "";
}

TEST(WorkThread, RunsInSubmissionOrderOnItsOwnNamedThread) {
  std::atomic<bool> started{false};
  std::vector<int> order;
  std::string name;
  std::thread::id worker;
  {
    WorkThread thread("common test", [&] { started = true; });
    std::vector<std::future<void>> done;
    for (int i = 0; i < 100; ++i) {
      done.push_back(thread.submit([&order, &name, &worker, i] {
        if (i == 0) {
          char buffer[16] = {};
          pthread_getname_np(pthread_self(), buffer, sizeof buffer);
          name = buffer;
          worker = std::this_thread::get_id();
        }
        order.push_back(i);
      }));
    }
    thread.drain();
    EXPECT_EQ(order.size(), 100u);
    for (auto& f : done) f.get();
  }
  EXPECT_TRUE(started);
  EXPECT_EQ(name, "common test");
  EXPECT_NE(worker, std::this_thread::get_id());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(WorkThread, FutureRethrowsAndLaterWorkStillRuns) {
  WorkThread thread("common test");
  auto failed = thread.submit([] { sdk::fail(STRATA_ERR_COMM, "peer gone"); });
  bool ran = false;
  auto next = thread.submit([&] { ran = true; });
  EXPECT_EQ(message_of([&] { failed.get(); }), "peer gone");
  next.get();
  EXPECT_TRUE(ran);
}

TEST(WorkThread, DestructorRunsWhatIsQueued) {
  std::atomic<int> runs{0};
  {
    WorkThread thread("common test");
    thread.submit([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
    for (int i = 0; i < 10; ++i) thread.submit([&] { ++runs; });
  }
  EXPECT_EQ(runs, 10);
}

TEST(WorkThread, DrainWhenIdleReturns) {
  WorkThread thread("common test");
  thread.drain();
  thread.submit([] {}).get();
  thread.drain();
}

}  // namespace
}  // namespace strata::common
