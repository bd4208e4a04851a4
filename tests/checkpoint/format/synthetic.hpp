// A synthetic checkpoint for the format's tests: parameters laid end to end and split evenly
// over the ranks (as ZeRO partitions a flat buffer), so ranges straddle parameters, and every
// value a function of (parameter, slot, element) that tests/checkpoint/format/tool_test.py
// computes the same way.
#pragma once

#include "checkpoint/format.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace strata::ckpt::test {

struct SyntheticSpec {
  int ranks = 3;
  std::vector<uint64_t> param_counts = {10, 1000, 37, 5000, 3};
  std::vector<std::string> slots = {"master", "exp_avg", "exp_avg_sq"};
};

// Exact in fp32 (an integer below 2^24 over a power of two), so any reader can compare exactly.
inline float synthetic_value(uint64_t param, uint64_t slot, uint64_t element) {
  const int64_t n = static_cast<int64_t>((param * 7919 + slot * 104729 + element * 31) % 1000003) - 500000;
  return static_cast<float>(n) / 1024.0f;
}

// The metadata (params "layerK.weight", document keys a runtime would add) without writing.
Metadata synthetic_metadata(const SyntheticSpec& spec);
// Writes TAG_DIR/rankNNNNN.shard for every rank and TAG_DIR/metadata.json; returns the metadata.
Metadata write_synthetic(const std::string& tag_dir, const SyntheticSpec& spec);

}  // namespace strata::ckpt::test
