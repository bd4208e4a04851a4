// Shared by the strata_zero tests: one comm instance per process (the MPI comm plugin finalises
// MPI when its last instance goes, so tests must not create and destroy their own), a FakeHost
// that records log lines, and a small RAII handle around a strata_zero instance.
#pragma once

#include "plugin_harness.hpp"

#include <gtest/gtest.h>
#include <strata/plugin.hpp>

#include <memory>
#include <string>
#include <vector>

namespace strata::zero_test {

// The comm plugin, created once before the first test and destroyed after the last.
class CommEnvironment : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;

  static const strata_comm_ops& ops();
  static void* self();
  static int rank();
  static int size();
};

struct LogLine {
  int32_t level;
  std::string text;
};

// A FakeHost wired to the shared comm instance whose log lines are kept for inspection.
class RecordingHost {
 public:
  RecordingHost();
  ~RecordingHost();
  RecordingHost(const RecordingHost&) = delete;
  RecordingHost& operator=(const RecordingHost&) = delete;
  strata_host_api* api() { return host_.api(); }
  size_t bytes(strata_mem_category c) { return host_.bytes(c); }
  void watch_peak(uint32_t mask) { host_.watch_peak(mask); }
  size_t watched_peak() { return host_.watched_peak(); }
  size_t allocations() { return host_.allocations(); }
  std::vector<LogLine> lines(int32_t level) const;

 private:
  static void record(void* ctx, int32_t level, const char* message);
  test::FakeHost host_;
  std::vector<LogLine> lines_;
};

const strata_sharding_ops& zero_ops();

// One strata_zero instance; every call returns its status and keeps the last error message.
class Zero {
 public:
  Zero(RecordingHost& host, const std::string& config_json);
  ~Zero();
  Zero(const Zero&) = delete;
  Zero& operator=(const Zero&) = delete;

  strata_status created() const { return create_status_; }
  const std::string& message() const { return message_; }

  strata_status register_param(uint32_t index, const char* name, void* data, void* grad,
                               uint64_t count, int32_t dtype = STRATA_F32);
  strata_status finalize();
  strata_status grad_ready(uint32_t index, bool boundary);
  strata_status finish_reduce();
  strata_status zero_grad();
  strata_status publish();
  strata_status query(strata_sharding_caps* caps);
  strata_status owned_shards(const strata_shard** shards, size_t* count);
  // ABI 1.1
  strata_status define_group(uint32_t group, const char* name, const std::vector<uint32_t>& params);
  strata_status gather(uint32_t group, bool for_backward = false);
  strata_status release(uint32_t group);
  strata_status end_micro_step(bool boundary);
  strata_status param_view(uint32_t index, strata_param_view* view);
  // param_view's data / grad, or nullptr when the call fails (the message is kept).
  float* data_of(uint32_t index);
  float* grad_of(uint32_t index);

 private:
  strata_status keep(strata_status status);
  void* self_ = nullptr;
  strata_status create_status_;
  strata_error err_ = sdk::make_error();
  std::string message_;
};

// Elementwise check that `data` is bitwise the same on every rank (MIN == MAX == own bits).
bool identical_on_all_ranks(const std::vector<float>& data);
// Sums `values` over ranks (blocking f64 allreduce).
std::vector<double> sum_over_ranks(std::vector<double> values);

bool contains(const std::string& text, const std::string& part);

}  // namespace strata::zero_test
