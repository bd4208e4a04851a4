// The sharding plugin's configuration: DeepSpeed's `zero_optimization` object (merged by the
// runtime with the manifest's sharding.config), validated with DeepSpeed's key names and types.
#pragma once

#include <strata/plugin_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace strata::zero {

// Default fusion-bucket capacity, in elements. DeepSpeed's 5e8 elements (2 GB of fp32 per bucket)
// is sized for GPUs with tens of GB; in a host-memory runtime it would copy the whole model into
// one buffer and leave nothing to overlap with the backward pass. 2^20 elements (4 MiB of fp32):
//  - is where Open MPI's allreduce peaks on these machines (4 MiB: 4.5 GB/s; 16 MiB pieces:
//    3.3 GB/s; 32-64 MiB: 1.5 GB/s), and the comm plugin cuts bigger messages into pieces anyway
//    (chunk_bytes, 1 MiB by default), so larger buckets would save no collectives, only add
//    copying;
//  - still amortises the per-collective latency (~7 us against ~1 ms of transfer);
//  - lets tensors of 4 MiB and more sit alone in their bucket and be reduced in place, uncopied,
//    while small tensors are fused, and keeps the fusion memory below one gradient copy.
inline constexpr uint64_t kDefaultReduceBucketSize = uint64_t{1} << 20;
// The same reasoning holds for the pieces publish() allgathers parameters in.
inline constexpr uint64_t kDefaultAllgatherBucketSize = uint64_t{1} << 20;
// DeepSpeed's stage-3 defaults (deepspeed/runtime/zero/config.py).
inline constexpr uint64_t kDefaultPrefetchBucketSize = 50'000'000;
inline constexpr uint64_t kDefaultPersistenceThreshold = 100'000;
inline constexpr uint64_t kDefaultMaxLiveParameters = 1'000'000'000;
inline constexpr uint64_t kDefaultMaxReuseDistance = 1'000'000'000;

struct ZeroConfig {
  int stage = 0;
  uint64_t reduce_bucket_size = kDefaultReduceBucketSize;
  uint64_t allgather_bucket_size = kDefaultAllgatherBucketSize;
  // At most two bucket reductions in flight (true) or each one blocking (false). DeepSpeed turns
  // it on by default at stage 3 only; here it costs one more fusion buffer and helps every stage.
  bool overlap_comm = true;
  // Stages 2-3: lent gradient buffers are slices of the bucket's buffer (no copy at reduction).
  bool contiguous_gradients = true;
  uint64_t prefetch_bucket_size = kDefaultPrefetchBucketSize;
  uint64_t param_persistence_threshold = kDefaultPersistenceThreshold;
  uint64_t max_live_parameters = kDefaultMaxLiveParameters;
  // DeepSpeed's communication_data_type: the dtype gradients travel in when they are reduced
  // over ranks. STRATA_F32 (default): every stage sums the fp32 values of the gradients in fp32,
  // so stages 0-3 do the same arithmetic (bitwise equal at 2 ranks). STRATA_F16 / STRATA_BF16:
  // each fp32 bucket is rounded to that dtype before the collective and the average widened back
  // after it (half the bytes; the comm plugin sums in fp32 but the inputs and average are rounded).
  int32_t communication_dtype = STRATA_F32;
  // Stage 3: a released group gathered again within this many gathered elements stays cached
  // (0: never).
  uint64_t max_reuse_distance = kDefaultMaxReuseDistance;
  // DeepSpeed keys that were given but have no effect at `stage` in Strata, by name (with a note
  // where a value is not honoured). The plugin names them in one warning rather than ignoring
  // them silently.
  std::vector<std::string> ignored_keys;
};

// Parses and validates `json` (a JSON object text). Throws strata::sdk::Error with
// STRATA_ERR_INVALID_ARGUMENT naming the key for unknown keys, wrong types, bad values and
// aliases given twice with different values.
ZeroConfig parse_config(const char* json);

}  // namespace strata::zero
