// What stages 1-3 decide the same way at finalize: the one model dtype, bucket keys by group, and
// the plan's log line. Free functions: each stage calls them in its own finalize.
#pragma once

#include "comm_link.hpp"
#include "config.hpp"
#include "dtype_cast.hpp"
#include "group_state.hpp"
#include "param.hpp"
#include "partition_layout.hpp"

#include <strata/plugin.hpp>

#include <cstdint>
#include <vector>

namespace strata::zero {

// Stages 2-3 lend gradients only to gathered groups: a parameter without a gradient buffer must
// be in one. Throws naming the first that is not.
void require_grad_or_group(const std::vector<ParamRecord>& params, const GroupState& groups,
                           int stage);

// The model dtype every parameter shares (f32 for none); throws unless the precision stratum can
// convert it to and from fp32 and the comm stratum can allgather it (publish, stage 3 gather).
int32_t partitioned_model_dtype(const std::vector<ParamRecord>& params, const Caster& caster,
                                const CommLink& comm, int stage);

std::vector<uint64_t> element_counts(const std::vector<ParamRecord>& params);
// Per parameter: its group + 1, or 0 for none, so that a released group completes whole buckets.
std::vector<uint64_t> group_keys(const GroupState& groups);

// Parameters in buckets that are not partitioned (all of them below stage 3).
size_t persistent_params(const PartitionLayout& layout);

// One info line: buckets, elements, partition size and padding, dtype, overlap.
void log_partition_plan(const sdk::Host& host, int stage, const PartitionLayout& layout,
                        size_t params, int32_t dtype, const ZeroConfig& config);

// Half models: says that the step writes the model copies of `shards` shards (what the
// fused-copy-out equivalence test looks for).
void log_model_copies(const sdk::Host& host, int stage, int32_t dtype, size_t shards);

}  // namespace strata::zero
