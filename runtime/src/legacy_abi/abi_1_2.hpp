// A private copy of the ABI 1.0-1.2 layouts that ABI 1.3 changed: the four ops tables (no
// strata_ops_header; create takes (config_json, host); collectives and the sharding calls take
// positional arguments) and the shard of ABI 1.0-1.1 (without `model`, `model_dtype`). Structs
// that did not change (strata_buffer, strata_param_desc, caps, strata_error, strata_host_api's own
// layout, ...) come from today's plugin_api.h. Only the adapter (legacy_plugin.cpp) and its tests
// use these; they are C++ names, no macros, so they never clash with plugin_api.h.
//
// Each table is the 1.2 header's struct field for field; a 1.0 table is a prefix of it (sharding:
// up to zero_grad), and the adapter reads only the fields inside the table's struct_size.
#pragma once

#include <strata/plugin_api.h>

#include <cstddef>
#include <cstdint>

namespace strata::rt::legacy::v1_2 {

// create() of every 1.0-1.2 table.
using create_fn = strata_status (*)(const char* config_json, const strata_host_api* host, void** self,
                                    strata_error* err);

struct comm_ops {
  size_t struct_size;
  create_fn create;
  void (*destroy)(void* self);
  strata_status (*query)(void* self, strata_comm_caps* caps, strata_error* err);
  strata_status (*allreduce)(void* self, const strata_buffer* send, const strata_buffer* recv,
                             int32_t op, strata_request* req, strata_error* err);
  strata_status (*allgather)(void* self, const strata_buffer* send, const strata_buffer* recv,
                             strata_request* req, strata_error* err);
  strata_status (*allgatherv)(void* self, const strata_buffer* send, const strata_buffer* recv,
                              const uint64_t* recv_counts, const uint64_t* displs,
                              strata_request* req, strata_error* err);
  strata_status (*reduce_scatter)(void* self, const strata_buffer* send, const strata_buffer* recv,
                                  int32_t op, strata_request* req, strata_error* err);
  strata_status (*broadcast)(void* self, const strata_buffer* buf, int32_t root, strata_request* req,
                             strata_error* err);
  strata_status (*barrier)(void* self, strata_request* req, strata_error* err);
  strata_status (*wait)(void* self, strata_request req, strata_error* err);
  strata_status (*test)(void* self, strata_request req, int32_t* done, strata_error* err);
};

struct sharding_ops {
  size_t struct_size;
  create_fn create;
  void (*destroy)(void* self);
  strata_status (*query)(void* self, strata_sharding_caps* caps, strata_error* err);
  strata_status (*register_param)(void* self, uint32_t index, const strata_param_desc* param,
                                  strata_error* err);
  strata_status (*finalize)(void* self, strata_error* err);
  strata_status (*grad_ready)(void* self, uint32_t index, int32_t boundary, strata_error* err);
  strata_status (*finish_reduce)(void* self, strata_error* err);
  strata_status (*owned_shards)(void* self, const strata_shard** shards, size_t* count,
                                strata_error* err);
  strata_status (*publish)(void* self, strata_error* err);
  strata_status (*zero_grad)(void* self, strata_error* err);
  // ---- ABI 1.1: parameter groups (all five or none) ----
  strata_status (*define_group)(void* self, uint32_t group, const char* name, const uint32_t* params,
                                size_t count, strata_error* err);
  strata_status (*gather)(void* self, uint32_t group, uint32_t flags, strata_error* err);
  strata_status (*release)(void* self, uint32_t group, strata_error* err);
  strata_status (*param_view)(void* self, uint32_t index, strata_param_view* view, strata_error* err);
  strata_status (*end_micro_step)(void* self, int32_t boundary, strata_error* err);
};

struct precision_ops {
  size_t struct_size;
  create_fn create;
  void (*destroy)(void* self);
  strata_status (*query)(void* self, strata_precision_caps* caps, strata_error* err);
  strata_status (*loss_scale)(void* self, double* scale, strata_error* err);
  strata_status (*grad_stats)(void* self, const strata_shard* shards, size_t count,
                              strata_grad_stats* stats, strata_error* err);
  strata_status (*update)(void* self, int32_t overflow, strata_error* err);
  strata_status (*cast)(void* self, const strata_buffer* src, const strata_buffer* dst,
                        strata_error* err);
};

struct offload_ops {
  size_t struct_size;
  create_fn create;
  void (*destroy)(void* self);
  strata_status (*query)(void* self, strata_offload_caps* caps, strata_error* err);
  strata_status (*init_state)(void* self, const strata_shard* shards, size_t count, strata_error* err);
  strata_status (*step)(void* self, const strata_shard* shards, size_t count,
                        const strata_step_args* args, strata_error* err);
};

// The first fields of every 1.0-1.2 table.
struct common_ops {
  size_t struct_size;
  create_fn create;
  void (*destroy)(void* self);
};

// strata_shard as ABI 1.0 and 1.1 laid it out: arrays of it have this stride. ABI 1.2 appended
// `model` and `model_dtype`, which makes today's layout.
struct shard_1_0 {
  size_t struct_size;
  uint32_t param_index;
  uint64_t offset;
  uint64_t count;
  float* master;
  float* grad;
};

// The first minor whose strata_shard is today's (model copies).
inline constexpr uint32_t kShardModelMinor = 2;
// The minor the host table handed to legacy plugins says it is.
inline constexpr uint32_t kHostMinor = 2;

// Sizes as 1.0 and 1.2 define them: up to and including the last field of that minor.
inline constexpr size_t kHostSize1_2 = STRATA_HOST_API_SIZE_1_2;
inline constexpr size_t kCommSize1_0 = sizeof(comm_ops);
inline constexpr size_t kShardingSize1_0 = offsetof(sharding_ops, zero_grad) + sizeof(void*);
inline constexpr size_t kShardingSize1_1 = sizeof(sharding_ops);
inline constexpr size_t kPrecisionSize1_0 = sizeof(precision_ops);
inline constexpr size_t kOffloadSize1_0 = sizeof(offload_ops);

// The common prefix is where every table has it.
static_assert(offsetof(comm_ops, destroy) == offsetof(common_ops, destroy));
static_assert(offsetof(sharding_ops, destroy) == offsetof(common_ops, destroy));
static_assert(offsetof(precision_ops, destroy) == offsetof(common_ops, destroy));
static_assert(offsetof(offload_ops, destroy) == offsetof(common_ops, destroy));
// ABI 1.2's shard is 1.0's plus two appended fields.
static_assert(offsetof(strata_shard, grad) == offsetof(shard_1_0, grad));
static_assert(offsetof(strata_shard, model) >= sizeof(shard_1_0));

}  // namespace strata::rt::legacy::v1_2
