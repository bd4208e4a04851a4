// Every key DeepSpeed's zero_optimization accepts (deepspeed/runtime/zero/config.py), its type,
// from which stage it has an effect in Strata, and which setting it feeds. DeepSpeed's config
// model forbids extra keys, so anything else is an error. The stage3_ names are aliases of the
// bare names; DeepSpeed accepts either.
#pragma once

#include <string_view>

namespace strata::zero {

// What a DeepSpeed key's value must be (mirrors the field types of DeepSpeedZeroConfig).
enum class Kind {
  kStage,         // integer 0..3
  kPositiveInt,   // bucket sizes: DeepSpeed allows 0, but a 0-element bucket moves nothing
  kNonNegInt,     // pydantic Field(ge=0)
  kInt,           // any integer
  kBool,
  kOptionalBool,  // bool or null
  kOptionalObject,
  kObject,
  kCommDtype,     // "fp32", "fp16" or "bf16" (DeepSpeed's communication_data_type)
};

// The ZeroConfig field a key sets (aliases share one).
enum class Field {
  kNone,
  kStage,
  kReduceBucketSize,
  kAllgatherBucketSize,
  kOverlapComm,
  kContiguousGradients,
  kPrefetchBucketSize,
  kPersistenceThreshold,
  kMaxLiveParameters,
  kCommunicationDataType,
  kMaxReuseDistance,
};

// From which stage a key has an effect. Keys for PyTorch/GPU-only features (module hooks,
// ZeRO++ quantisation, MiCS, ZenFlow), for checkpoint files and for tuning knobs of DeepSpeed's
// own machinery that Strata does not have (e.g. module granularity) have none: kNever.
inline constexpr int kAlways = 0, kStage1 = 1, kStage2 = 2, kStage3 = 3, kNever = 4;
// offload_optimizer, offload_param and sub_group_size configure the offload stratum, which
// validates them.
inline constexpr int kOtherStratum = -1;

struct KeySpec {
  std::string_view name;
  Kind kind;
  int effective_from;  // a stage, kNever or kOtherStratum
  Field field = Field::kNone;
  // For booleans Strata cannot turn off: why `false` is not honoured (warned about).
  const char* when_false = nullptr;
  bool deprecated = false;
};

inline constexpr const char* kAlwaysReduceScatters =
    "false is not honoured: Strata always reduce-scatters";
inline constexpr const char* kAlwaysAllgathers = "false is not honoured: Strata always allgathers";
inline constexpr const char* kToleratesUnused =
    "false is not honoured: Strata always accepts parameters without gradients";

inline constexpr KeySpec kKeys[] = {
    {"stage", Kind::kStage, kAlways, Field::kStage},
    {"reduce_bucket_size", Kind::kPositiveInt, kAlways, Field::kReduceBucketSize},
    {"offload_optimizer", Kind::kOptionalObject, kOtherStratum},
    // DeepSpeed's top-level key; the runtime passes it here (zero_optimization spelling too).
    {"communication_data_type", Kind::kCommDtype, kAlways, Field::kCommunicationDataType},
    {"offload_param", Kind::kOptionalObject, kOtherStratum},
    {"contiguous_gradients", Kind::kBool, kStage2, Field::kContiguousGradients},
    {"reduce_scatter", Kind::kBool, kStage1, Field::kNone, kAlwaysReduceScatters},
    {"use_multi_rank_bucket_allreduce", Kind::kBool, kNever},
    {"allgather_partitions", Kind::kBool, kStage1, Field::kNone, kAlwaysAllgathers},
    {"allgather_bucket_size", Kind::kPositiveInt, kStage1, Field::kAllgatherBucketSize},
    {"overlap_comm", Kind::kOptionalBool, kStage1, Field::kOverlapComm},
    {"load_from_fp32_weights", Kind::kBool, kNever},
    {"elastic_checkpoint", Kind::kBool, kNever},
    {"zenflow", Kind::kOptionalObject, kNever},
    {"sub_group_size", Kind::kNonNegInt, kOtherStratum},
    {"prefetch_bucket_size", Kind::kNonNegInt, kStage3, Field::kPrefetchBucketSize},
    {"stage3_prefetch_bucket_size", Kind::kNonNegInt, kStage3, Field::kPrefetchBucketSize},
    {"param_persistence_threshold", Kind::kNonNegInt, kStage3, Field::kPersistenceThreshold},
    {"stage3_param_persistence_threshold", Kind::kNonNegInt, kStage3, Field::kPersistenceThreshold},
    {"model_persistence_threshold", Kind::kNonNegInt, kNever},
    {"stage3_model_persistence_threshold", Kind::kNonNegInt, kNever},
    {"max_live_parameters", Kind::kNonNegInt, kStage3, Field::kMaxLiveParameters},
    {"stage3_max_live_parameters", Kind::kNonNegInt, kStage3, Field::kMaxLiveParameters},
    {"max_reuse_distance", Kind::kNonNegInt, kStage3, Field::kMaxReuseDistance},
    {"stage3_max_reuse_distance", Kind::kNonNegInt, kStage3, Field::kMaxReuseDistance},
    {"gather_16bit_weights_on_model_save", Kind::kBool, kNever},
    {"stage3_gather_16bit_weights_on_model_save", Kind::kBool, kNever},
    {"module_granularity_threshold", Kind::kInt, kNever},
    {"stage3_module_granularity_threshold", Kind::kInt, kNever},
    {"use_all_reduce_for_fetch_params", Kind::kBool, kNever},
    {"stage3_use_all_reduce_for_fetch_params", Kind::kBool, kNever},
    {"allgather_sequential", Kind::kBool, kNever},
    {"stage3_allgather_sequential", Kind::kBool, kNever},
    {"partition_stream_chunk_size", Kind::kNonNegInt, kNever},
    {"stage3_partition_stream_chunk_size", Kind::kNonNegInt, kNever},
    {"ignore_unused_parameters", Kind::kBool, kStage2, Field::kNone, kToleratesUnused},
    {"legacy_stage1", Kind::kBool, kNever},
    {"round_robin_gradients", Kind::kBool, kNever},
    {"zero_hpz_partition_size", Kind::kNonNegInt, kNever},
    {"zero_quantized_weights", Kind::kBool, kNever},
    {"zero_quantized_nontrainable_weights", Kind::kBool, kNever},
    {"zero_quantized_gradients", Kind::kBool, kNever},
    {"zeropp_loco_param", Kind::kOptionalObject, kNever},
    {"mics_shard_size", Kind::kInt, kNever},
    {"mics_hierarchical_params_gather", Kind::kBool, kNever},
    {"memory_efficient_linear", Kind::kBool, kNever},
    {"pipeline_loading_checkpoint", Kind::kBool, kNever},
    {"override_module_apply", Kind::kBool, kNever},
    {"log_trace_cache_warnings", Kind::kBool, kNever},
    {"enable_sanity_checks", Kind::kBool, kNever},
    {"save_muon_momentum_buffer_in_memory", Kind::kBool, kNever},
    {"leaf_module", Kind::kObject, kNever},
    {"cpu_offload", Kind::kOptionalBool, kNever, Field::kNone, nullptr, true},
    {"cpu_offload_param", Kind::kOptionalBool, kNever, Field::kNone, nullptr, true},
    {"cpu_offload_use_pin_memory", Kind::kOptionalBool, kNever, Field::kNone, nullptr, true},
    {"stage3_gather_fp16_weights_on_model_save", Kind::kBool, kNever, Field::kNone, nullptr, true},
};

}  // namespace strata::zero
