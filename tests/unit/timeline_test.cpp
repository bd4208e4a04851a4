// Issue 12's pieces without a job: StepTime (the per-step split), the Chrome trace text of one
// event, and a one-rank Timeline finished alone (the failure path).
#include "timeline/timeline.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "faults/activity.hpp"
#include "timeline/step_time.hpp"
#include "timeline/trace_event.hpp"

namespace {

using nlohmann::json;
using strata::rt::ActivityBoard;
using strata::rt::StepTime;
using strata::rt::StepTimes;
using strata::rt::Timeline;
using strata::rt::TimePart;
using strata::rt::TraceEvent;

// Busy for at least `ms` milliseconds (a steady-clock spin: the parts charge elapsed time).
void spin_ms(double ms) {
  const auto start = std::chrono::steady_clock::now();
  while (
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() <
      ms) {
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The parts (whose sum is the wall time) cover the time since construction, as a clock around
// it measures it: nothing is charged twice, nothing is lost.
TEST(StepTime, PartsAddUpToWall) {
  const auto outer = std::chrono::steady_clock::now();
  StepTime st;
  const auto inner = std::chrono::steady_clock::now();
  spin_ms(2);  // host code
  ASSERT_TRUE(st.call_begin());
  spin_ms(1);  // the call's own time: runtime_other
  ASSERT_TRUE(st.part_begin(TimePart::Optimizer));
  spin_ms(3);
  st.part_end();
  st.call_end();
  const double inner_seconds = seconds_since(inner);
  const StepTimes t = st.take();
  const double outer_seconds = seconds_since(outer);
  EXPECT_GE(t.wall(), inner_seconds);
  EXPECT_LE(t.wall(), outer_seconds);
  EXPECT_GE(t[TimePart::Host], 0.002);
  EXPECT_GE(t[TimePart::Optimizer], 0.003);
  EXPECT_GE(t[TimePart::RuntimeOther], 0.001);
  EXPECT_EQ(t[TimePart::CommWait], 0.0);
  EXPECT_EQ(t[TimePart::Gather], 0.0);
  EXPECT_GE(t.wall(), 0.006);
}

TEST(StepTime, NestedPartIsChargedToTheInnerPart) {
  const auto outer = std::chrono::steady_clock::now();
  StepTime st;
  // Checked against the call's duration as measured around it, so that a preemption (a loaded
  // machine) cannot make it fail: the wait is charged to CommWait and not to Gather as well.
  const auto call_start = std::chrono::steady_clock::now();
  ASSERT_TRUE(st.call_begin());
  ASSERT_TRUE(st.part_begin(TimePart::Gather));
  spin_ms(1);
  ASSERT_TRUE(st.part_begin(TimePart::CommWait));  // a wait inside a gather is a wait
  spin_ms(30);
  st.part_end();
  spin_ms(1);
  st.part_end();
  st.call_end();
  const double call_measured =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - call_start).count();
  const StepTimes t = st.take();
  EXPECT_GE(t[TimePart::CommWait], 0.030);
  EXPECT_GE(t[TimePart::Gather], 0.002);
  EXPECT_LE(t[TimePart::Gather], call_measured - t[TimePart::CommWait] + 1e-6);
  EXPECT_GE(t.wall(), call_measured);
  EXPECT_LE(t.wall(), seconds_since(outer));
}

TEST(StepTime, PartOutsideACallOrFromAnotherThreadIsIgnored) {
  const auto outer = std::chrono::steady_clock::now();
  StepTime st;
  EXPECT_FALSE(st.part_begin(TimePart::CommWait));  // host code: not counted
  ASSERT_TRUE(st.call_begin());
  bool other_part = true, other_call = true;
  std::thread other([&] {
    other_part = st.part_begin(TimePart::CommWait);  // a plugin's worker thread
    other_call = st.call_begin();                    // a second thread breaking the one-thread rule
  });
  other.join();
  EXPECT_FALSE(other_part);
  EXPECT_FALSE(other_call);
  spin_ms(5);
  st.call_end();
  const StepTimes t = st.take();
  EXPECT_EQ(t[TimePart::CommWait], 0.0);
  EXPECT_GE(t[TimePart::RuntimeOther], 0.005);
  EXPECT_LE(t.wall(), seconds_since(outer));  // the other thread's marks added nothing
}

TEST(StepTime, TakeResets) {
  StepTime st;
  ASSERT_TRUE(st.call_begin());
  ASSERT_TRUE(st.part_begin(TimePart::Optimizer));
  spin_ms(10);
  st.part_end();
  st.call_end();
  const auto before_first = std::chrono::steady_clock::now();
  const StepTimes first = st.take();
  EXPECT_GE(first[TimePart::Optimizer], 0.010);
  spin_ms(1);
  const StepTimes second = st.take();
  const double between =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - before_first).count();
  EXPECT_EQ(second[TimePart::Optimizer], 0.0);
  EXPECT_EQ(second[TimePart::RuntimeOther], 0.0);
  EXPECT_GE(second[TimePart::Host], 0.001);
  EXPECT_LE(second.wall(), between + 1e-6);  // only the time since the first take()
  EXPECT_GE(second.wall(), 0.001);
}

json parse_events(const std::string& text) { return json::parse("[" + text + "]"); }

TEST(TraceEventText, CompleteEvent) {
  TraceEvent e;
  e.name = "allreduce";
  e.category = "comm";
  e.begin_ns = 5'000'000 + 1'500'000;  // 1500 us after the origin
  e.end_ns = e.begin_ns + 250'500;
  e.index = 3;
  e.bytes = 4096;
  e.step = 7;
  e.seq = 17;
  e.tid = 42;
  std::string out;
  strata::rt::append_trace_event(out, e, 1, 5'000'000, 0);
  const json events = parse_events(out);
  ASSERT_EQ(events.size(), 1u);
  const json& x = events[0];
  EXPECT_EQ(x["ph"], "X");
  EXPECT_EQ(x["cat"], "comm");
  EXPECT_EQ(x["name"], "allreduce");
  EXPECT_EQ(x["pid"], 1);
  EXPECT_EQ(x["tid"], 42);
  EXPECT_NEAR(x["ts"].get<double>(), 1500.0, 1e-3);
  EXPECT_NEAR(x["dur"].get<double>(), 250.5, 1e-3);
  EXPECT_EQ(x["args"]["step"], 7);
  EXPECT_EQ(x["args"]["index"], 3);
  EXPECT_EQ(x["args"]["bytes"], 4096);
  EXPECT_EQ(x["args"]["seq"], 17);
}

TEST(TraceEventText, OptionalArgsLeftOut) {
  TraceEvent e;
  e.name = "optimizer";
  e.category = "step";
  e.begin_ns = 10'000;
  e.end_ns = 20'000;
  std::string out;
  strata::rt::append_trace_event(out, e, 0, 0, 0);
  const json x = parse_events(out)[0];
  EXPECT_EQ(x["args"], json({{"step", 0}}));
}

TEST(TraceEventText, InstantWithMessage) {
  TraceEvent e;
  e.name = "failure";
  e.category = "runtime";
  e.begin_ns = e.end_ns = 3'000;
  e.instant = true;
  e.step = 2;
  e.message = "stall: rank 0 has waited 3.0 s on allreduce #17 \"quoted\"\nsecond line";
  std::string out;
  strata::rt::append_trace_event(out, e, 0, 0, 0);
  const json x = parse_events(out)[0];
  EXPECT_EQ(x["ph"], "i");
  EXPECT_FALSE(x.contains("dur"));
  EXPECT_EQ(x["args"]["message"], e.message);
  EXPECT_EQ(x["args"]["step"], 2);
}

TEST(TraceEventText, InFlightSpanIsAnAsyncPair) {
  TraceEvent e;
  e.name = "bucket_reduce";
  e.category = "sharding";
  e.begin_ns = 1'000'000;
  e.end_ns = 4'000'000;
  e.index = 1;
  e.step = 5;
  e.tid = 9;
  e.in_flight = true;
  std::string out;
  strata::rt::append_trace_event(out, e, 1, 0, 77);
  const json events = parse_events(out);
  ASSERT_EQ(events.size(), 2u);
  const json& b = events[0];
  const json& end = events[1];
  EXPECT_EQ(b["ph"], "b");
  EXPECT_EQ(end["ph"], "e");
  for (const char* key : {"id", "cat", "name", "pid"}) EXPECT_EQ(b[key], end[key]) << key;
  EXPECT_EQ(b["id"], 77);
  EXPECT_NEAR(b["ts"].get<double>(), 1000.0, 1e-3);
  EXPECT_NEAR(end["ts"].get<double>(), 4000.0, 1e-3);
  EXPECT_EQ(b["args"]["index"], 1);
  EXPECT_EQ(b["args"]["step"], 5);
}

TEST(TraceEventText, NameWithAQuoteIsEscaped) {
  TraceEvent e;
  e.name = "my \"odd\" span\\";
  e.category = "offload";
  e.begin_ns = 0;
  e.end_ns = 1000;
  std::string out;
  strata::rt::append_trace_event(out, e, 0, 0, 0);
  std::string meta;
  strata::rt::append_process_name(meta, 3);
  meta += ",\n";
  strata::rt::append_thread_name(meta, 3, 11, "worker \"1\"");
  const json x = parse_events(out)[0];
  EXPECT_EQ(x["name"], "my \"odd\" span\\");
  const json m = parse_events(meta);
  bool process = false, thread = false;
  for (const json& ev : m) {
    EXPECT_EQ(ev["ph"], "M");
    if (ev["name"] == "process_name") process = ev["args"]["name"] == "rank 3";
    if (ev["name"] == "thread_name")
      thread = ev["args"]["name"] == "worker \"1\"" && ev["tid"] == 11;
  }
  EXPECT_TRUE(process);
  EXPECT_TRUE(thread);
}

class TimelineAlone : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("strata_timeline_test." + std::to_string(getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(TimelineAlone, FinishAloneKeepsSpansAndTheFailure) {
  ActivityBoard board;
  const std::string path = (dir_ / "trace.json").string();
  const std::string part = path + ".rank0.part";
  std::string kept;
  {
    Timeline timeline(path, "STRATA_TIMELINE", 0, Timeline::now_ns(), board);
    EXPECT_TRUE(std::filesystem::exists(part));
    const int64_t t0 = Timeline::now_ns();
    timeline.span("api", "strata_step", t0, t0 + 1000);
    std::thread worker([&] {
      const int64_t t1 = Timeline::now_ns();
      timeline.span("sharding", "bucket_reduce", t1, t1 + 5000, 2, 0, 0, true);
      timeline.span("comm", "allreduce", t1, t1 + 2000, -1, 64, 3);
    });
    worker.join();
    kept = timeline.finish_alone("boom");
    timeline.span("api", "after_the_end", t0, t0 + 1);  // dropped, not a crash
  }
  EXPECT_EQ(kept, path + ".rank0.json");
  EXPECT_FALSE(std::filesystem::exists(part));
  EXPECT_FALSE(std::filesystem::exists(path));
  std::ifstream in(kept);
  ASSERT_TRUE(in.good());
  const json events = json::parse(in);
  ASSERT_TRUE(events.is_array());
  std::set<std::string> names;
  std::set<int64_t> span_tids, named_tids;
  bool process_name = false, failure = false, async_begin = false, async_end = false;
  for (const json& e : events) {
    const std::string ph = e.value("ph", "");
    EXPECT_EQ(e["pid"], 0);
    if (ph == "M") {
      if (e["name"] == "process_name") process_name = e["args"]["name"] == "rank 0";
      if (e["name"] == "thread_name") named_tids.insert(e["tid"].get<int64_t>());
      continue;
    }
    names.insert(e["name"].get<std::string>());
    if (ph == "X") span_tids.insert(e["tid"].get<int64_t>());
    if (ph == "b") async_begin = e["name"] == "bucket_reduce" && e["args"]["index"] == 2;
    if (ph == "e") async_end = e["name"] == "bucket_reduce";
    if (ph == "i" && e["name"] == "failure") {
      failure = e["cat"] == "runtime" && e["args"]["message"] == "boom";
    }
    if (ph == "X" && e["name"] == "allreduce") {
      EXPECT_EQ(e["args"]["seq"], 3);
    }
  }
  EXPECT_TRUE(process_name);
  EXPECT_TRUE(failure) << events.dump(1);
  EXPECT_TRUE(async_begin);
  EXPECT_TRUE(async_end);
  EXPECT_EQ(names.count("strata_step"), 1u);
  EXPECT_EQ(names.count("allreduce"), 1u);
  EXPECT_EQ(names.count("after_the_end"), 0u);
  EXPECT_EQ(span_tids.size(), 2u);  // two threads, two tracks
  for (int64_t tid : span_tids)
    EXPECT_EQ(named_tids.count(tid), 1u) << "thread " << tid << " has no name";
}

TEST_F(TimelineAlone, UnwritablePathNamesItsOrigin) {
  ActivityBoard board;
  const std::string path = (dir_ / "missing" / "trace.json").string();
  try {
    Timeline timeline(path, "/timeline", 0, Timeline::now_ns(), board);
    FAIL() << "no error for a path in a missing folder";
  } catch (const std::exception& e) {
    EXPECT_NE(
        std::string(e.what()).find("/timeline: cannot write the timeline next to '" + path + "'"),
        std::string::npos)
        << e.what();
  }
  try {
    Timeline timeline(dir_.string(), "STRATA_TIMELINE", 0, Timeline::now_ns(), board);
    FAIL() << "no error for a folder";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("is a folder"), std::string::npos) << e.what();
  }
}

}  // namespace
