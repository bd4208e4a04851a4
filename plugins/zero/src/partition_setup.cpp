#include "partition_setup.hpp"

#include <string>

namespace strata::zero {

int32_t partitioned_model_dtype(const std::vector<ParamRecord>& params, const Caster& caster,
                                const CommLink& comm, int stage) {
  if (params.empty()) return STRATA_F32;
  const int32_t dtype = common_dtype(params, stage);
  caster.require(dtype, "the model dtype of parameter " + params.front().name);
  if (!comm.can_move(dtype)) {
    sdk::fail(STRATA_ERR_UNSUPPORTED, std::string("the comm stratum cannot allgather ") +
                                          sdk::dtype_name(dtype) + ", the model dtype");
  }
  return dtype;
}

std::vector<uint64_t> element_counts(const std::vector<ParamRecord>& params) {
  std::vector<uint64_t> counts;
  counts.reserve(params.size());
  for (const ParamRecord& p : params) counts.push_back(p.count);
  return counts;
}

std::vector<uint64_t> group_keys(const GroupState& groups) {
  std::vector<uint64_t> keys;
  for (uint32_t p = 0; p < groups.params(); ++p) {
    const uint32_t g = groups.group_of(p);
    keys.push_back(g == kNoGroup ? 0 : uint64_t{g} + 1);
  }
  return keys;
}

size_t persistent_params(const PartitionLayout& layout) {
  size_t persistent = 0;
  for (size_t b = 0; b < layout.buckets().size(); ++b) {
    if (!layout.bucket(b).partitioned) persistent += layout.plan().buckets[b].slots.size();
  }
  return persistent;
}

void log_partition_plan(const sdk::Host& host, int stage, const PartitionLayout& layout,
                        size_t params, int32_t dtype, const ZeroConfig& config) {
  uint64_t elements = 0;
  for (const BucketPartition& b : layout.buckets()) elements += b.count;
  const uint64_t padded = layout.partition_elements() * static_cast<uint64_t>(layout.ranks());
  host.log(STRATA_LOG_INFO,
           "zero stage %d: %zu bucket%s (reduce_bucket_size %llu elements), %llu gradient "
           "elements in %zu params, %llu elements per rank partition (%llu of padding over all "
           "ranks), %zu persistent params, %s %s",
           stage, layout.buckets().size(), layout.buckets().size() == 1 ? "" : "s",
           static_cast<unsigned long long>(config.reduce_bucket_size),
           static_cast<unsigned long long>(elements), params,
           static_cast<unsigned long long>(layout.partition_elements()),
           static_cast<unsigned long long>(padded - elements), persistent_params(layout),
           sdk::dtype_name(dtype), config.overlap_comm ? "overlapped" : "blocking");
}

void log_model_copies(const sdk::Host& host, int stage, int32_t dtype, size_t shards) {
  if (shards == 0) return;
  host.log(STRATA_LOG_INFO,
           "zero stage %d: the step writes the %s copies of all %zu shards (model copies); "
           "publish only moves them",
           stage, sdk::dtype_name(dtype), shards);
}

void require_grad_or_group(const std::vector<ParamRecord>& params, const GroupState& groups,
                           int stage) {
  for (uint32_t i = 0; i < params.size(); ++i) {
    if (params[i].grad == nullptr && params[i].count > 0 && groups.group_of(i) == kNoGroup) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
                "parameter " + params[i].name + " has no gradient buffer and is in no group, so "
                "it could never receive a gradient at sharding stage " + std::to_string(stage) +
                ": register a grad buffer or put it in a group (gradients are lent to gathered "
                "groups)");
    }
  }
}

}  // namespace strata::zero
