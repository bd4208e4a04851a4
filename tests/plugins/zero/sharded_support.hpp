// What the stage 1-3 tests expect of the partition layout, written out independently of the
// plugin: bucket b of c elements gives every rank a slice of S = ceil(c / N) rounded up to a
// multiple of 16 elements, and the fusion buffers are 1 or 2 pairs of N*w + w floats, where
// w = min(S_max, c) and c = ceil(reduce_bucket_size / N) rounded up to a multiple of 16: bigger
// slices are reduce-scattered in pieces of c.
#pragma once

#include "test_model.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

namespace strata::zero_test {

// Odd sizes with reduce_bucket_size 256. Walking them in reverse: [5, 250] (255 elements),
// [129, 33] (162; the empty param joins nothing), [1000] (oversized), [1], [300] (oversized),
// [7]: six buckets.
inline const std::vector<uint64_t> kOddSizes = {7, 300, 1, 1000, 0, 33, 129, 250, 5};
inline const std::vector<uint64_t> kOddBuckets = {255, 162, 1000, 1, 300, 7};
// kOddSizes as three layers (the group tests): g0 = params 0-2, g1 = 3-5 (4 is empty), g2 = 6-8.
inline const std::vector<std::vector<uint32_t>> kGroups = {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}};

inline uint64_t expected_slice(uint64_t count, int ranks) {
  const auto n = static_cast<uint64_t>(ranks);
  return ((count + n - 1) / n + 15) / 16 * 16;
}
inline uint64_t expected_partition(const std::vector<uint64_t>& buckets, int ranks) {
  uint64_t total = 0;
  for (uint64_t c : buckets) total += expected_slice(c, ranks);
  return total;
}
inline uint64_t expected_fusion_bytes(const std::vector<uint64_t>& buckets, int ranks,
                                      bool overlap, uint64_t reduce_bucket_size = 256) {
  uint64_t widest = 0;
  for (uint64_t c : buckets) widest = std::max(widest, expected_slice(c, ranks));
  widest = std::min(widest, expected_slice(reduce_bucket_size, ranks));
  return (overlap ? 2 : 1) * (static_cast<uint64_t>(ranks) + 1) * widest * sizeof(float);
}

inline std::string stage_config(int stage, const std::string& extra = "") {
  return R"({"stage": )" + std::to_string(stage) + R"(, "reduce_bucket_size": 256)" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

// Counts, over all ranks, how often each element of each parameter is in some rank's shards;
// returns how many elements are not covered exactly once. Collective.
inline size_t coverage_errors(const strata_shard* shards, size_t count, const TestModel& model) {
  std::vector<size_t> start(model.params() + 1, 0);
  for (size_t p = 0; p < model.params(); ++p) start[p + 1] = start[p] + model.size(p);
  std::vector<double> hits(start.back(), 0.0);
  for (size_t s = 0; s < count; ++s) {
    for (uint64_t j = 0; j < shards[s].count; ++j) {
      hits[start[shards[s].param_index] + shards[s].offset + j] += 1.0;
    }
  }
  hits = sum_over_ranks(hits);
  return static_cast<size_t>(
      std::count_if(hits.begin(), hits.end(), [](double h) { return h != 1.0; }));
}

// Counts shard gradient elements that differ from the sum of TestModel::average over `steps`.
inline size_t wrong_shard_grads(const strata_shard* shards, size_t count,
                                const std::vector<int>& steps, std::string* first) {
  size_t wrong = 0;
  for (size_t s = 0; s < count; ++s) {
    for (uint64_t j = 0; j < shards[s].count; ++j) {
      float expected = 0.0f;
      const uint64_t i = shards[s].offset + j;
      for (int step : steps) expected += TestModel::average(shards[s].param_index, i, step);
      if (shards[s].grad[j] != expected && wrong++ == 0) {
        *first = "param " + std::to_string(shards[s].param_index) + " element " +
                 std::to_string(i) + ": got " + std::to_string(shards[s].grad[j]) +
                 ", expected " + std::to_string(expected);
      }
    }
  }
  return wrong;
}

}  // namespace strata::zero_test
