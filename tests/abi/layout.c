/* The layout of every public struct in strata/plugin_api.h and strata/strata.h, pinned as literal
 * numbers (C11 static assertions): sizeof and alignment of each struct, and offset and size of each
 * field, plus the value of every enumerator. An accidental reorder, a field inserted rather than
 * appended, a type widened or an enumerator renumbered fails the build here, in CI, before any
 * plugin built against an older header meets it.
 *
 * The numbers are those of the LP64 ABIs of x86_64 and aarch64 (they agree: 8-byte pointers,
 * size_t, uint64_t and double, natural alignment); on other targets nothing is asserted and the
 * ctest entry (layout_main.c) reports itself skipped.
 *
 * When the ABI grows (fields appended at the end of a struct, a new struct, a new enumerator), add
 * the new lines: take the numbers from a throwaway program that prints offsetof/sizeof, and check
 * that every line already here still holds. A line that must change is an ABI break. */
#include <stddef.h>
#include <stdint.h>

#include <strata/plugin_api.h>
#include <strata/strata.h>

#include "layout.h"

#define PIN_STRUCT(T, size, align)                                                         \
  _Static_assert(sizeof(T) == (size), "sizeof(" #T ") changed: the ABI layout moved");    \
  _Static_assert(_Alignof(T) == (align), "_Alignof(" #T ") changed: the ABI layout moved")
#define PIN_FIELD(T, field, offset, size)                                                  \
  _Static_assert(offsetof(T, field) == (offset),                                          \
                 "offsetof(" #T ", " #field ") changed: fields are only ever appended");  \
  _Static_assert(sizeof(((T*)0)->field) == (size),                                        \
                 "sizeof(" #T "." #field ") changed: the ABI layout moved")
#define PIN_VALUE(name, value) _Static_assert((name) == (value), #name " was renumbered")

#if defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__))
#define STRATA_LAYOUT_PINNED 1

/* The guard: every number below assumes these. */
_Static_assert(sizeof(size_t) == 8, "the pinned layout is LP64's: size_t is 8 bytes");
_Static_assert(sizeof(void*) == 8 && sizeof(void (*)(void)) == 8, "8-byte pointers");
_Static_assert(_Alignof(uint64_t) == 8 && _Alignof(double) == 8, "8-byte aligned 64-bit types");
_Static_assert(sizeof(int) == 4, "4-byte enums and int");

/* Constants the layout and the loader rely on. STRATA_ABI_MINOR grows; the rest never change. */
PIN_VALUE(STRATA_ABI_MAJOR, 1);
PIN_VALUE(STRATA_ABI_MINOR_TABLES, 3);
_Static_assert(STRATA_ABI_MINOR >= 7, "STRATA_ABI_MINOR only grows");
PIN_VALUE(STRATA_ERROR_MESSAGE_MAX, 1024);
PIN_VALUE(STRATA_GATHER_FOR_BACKWARD, 1u);
PIN_VALUE(STRATA_API_VERSION_MAJOR, 1);
/* strata_error */
PIN_STRUCT(strata_error, 1040, 8);
PIN_FIELD(strata_error, struct_size, 0, 8);
PIN_FIELD(strata_error, code, 8, 4);
PIN_FIELD(strata_error, message, 12, 1024);

/* strata_device */
PIN_STRUCT(strata_device, 8, 4);
PIN_FIELD(strata_device, type, 0, 4);
PIN_FIELD(strata_device, index, 4, 4);

/* strata_buffer */
PIN_STRUCT(strata_buffer, 40, 8);
PIN_FIELD(strata_buffer, struct_size, 0, 8);
PIN_FIELD(strata_buffer, data, 8, 8);
PIN_FIELD(strata_buffer, count, 16, 8);
PIN_FIELD(strata_buffer, dtype, 24, 4);
PIN_FIELD(strata_buffer, device, 28, 8);

/* strata_plugin_descriptor */
PIN_STRUCT(strata_plugin_descriptor, 56, 8);
PIN_FIELD(strata_plugin_descriptor, struct_size, 0, 8);
PIN_FIELD(strata_plugin_descriptor, abi_major, 8, 4);
PIN_FIELD(strata_plugin_descriptor, min_runtime_minor, 12, 4);
PIN_FIELD(strata_plugin_descriptor, kind, 16, 4);
PIN_FIELD(strata_plugin_descriptor, name, 24, 8);
PIN_FIELD(strata_plugin_descriptor, version, 32, 8);
PIN_FIELD(strata_plugin_descriptor, description, 40, 8);
PIN_FIELD(strata_plugin_descriptor, ops, 48, 8);

/* strata_ops_header */
PIN_STRUCT(strata_ops_header, 24, 8);
PIN_FIELD(strata_ops_header, struct_size, 0, 8);
PIN_FIELD(strata_ops_header, abi_major, 8, 4);
PIN_FIELD(strata_ops_header, built_minor, 12, 4);
PIN_FIELD(strata_ops_header, kind, 16, 4);
PIN_FIELD(strata_ops_header, reserved, 20, 4);

/* strata_plugin_create_args */
PIN_STRUCT(strata_plugin_create_args, 24, 8);
PIN_FIELD(strata_plugin_create_args, struct_size, 0, 8);
PIN_FIELD(strata_plugin_create_args, config_json, 8, 8);
PIN_FIELD(strata_plugin_create_args, host, 16, 8);

/* strata_comm_caps */
PIN_STRUCT(strata_comm_caps, 48, 8);
PIN_FIELD(strata_comm_caps, struct_size, 0, 8);
PIN_FIELD(strata_comm_caps, rank, 8, 4);
PIN_FIELD(strata_comm_caps, size, 12, 4);
PIN_FIELD(strata_comm_caps, local_rank, 16, 4);
PIN_FIELD(strata_comm_caps, local_size, 20, 4);
PIN_FIELD(strata_comm_caps, dtype_mask, 24, 4);
PIN_FIELD(strata_comm_caps, collective_mask, 28, 4);
PIN_FIELD(strata_comm_caps, device_mask, 32, 4);
PIN_FIELD(strata_comm_caps, nonblocking, 36, 4);
PIN_FIELD(strata_comm_caps, features, 40, 4);

/* strata_coll_args */
PIN_STRUCT(strata_coll_args, 64, 8);
PIN_FIELD(strata_coll_args, struct_size, 0, 8);
PIN_FIELD(strata_coll_args, send, 8, 8);
PIN_FIELD(strata_coll_args, recv, 16, 8);
PIN_FIELD(strata_coll_args, op, 24, 4);
PIN_FIELD(strata_coll_args, root, 28, 4);
PIN_FIELD(strata_coll_args, recv_counts, 32, 8);
PIN_FIELD(strata_coll_args, displs, 40, 8);
PIN_FIELD(strata_coll_args, send_counts, 48, 8);
PIN_FIELD(strata_coll_args, send_displs, 56, 8);

/* strata_comm_split_args */
PIN_STRUCT(strata_comm_split_args, 16, 8);
PIN_FIELD(strata_comm_split_args, struct_size, 0, 8);
PIN_FIELD(strata_comm_split_args, color, 8, 4);
PIN_FIELD(strata_comm_split_args, key, 12, 4);

/* strata_comm_ops */
PIN_STRUCT(strata_comm_ops, 128, 8);
PIN_FIELD(strata_comm_ops, header, 0, 24);
PIN_FIELD(strata_comm_ops, create, 24, 8);
PIN_FIELD(strata_comm_ops, destroy, 32, 8);
PIN_FIELD(strata_comm_ops, query, 40, 8);
PIN_FIELD(strata_comm_ops, allreduce, 48, 8);
PIN_FIELD(strata_comm_ops, allgather, 56, 8);
PIN_FIELD(strata_comm_ops, allgatherv, 64, 8);
PIN_FIELD(strata_comm_ops, reduce_scatter, 72, 8);
PIN_FIELD(strata_comm_ops, broadcast, 80, 8);
PIN_FIELD(strata_comm_ops, barrier, 88, 8);
PIN_FIELD(strata_comm_ops, wait, 96, 8);
PIN_FIELD(strata_comm_ops, test, 104, 8);
PIN_FIELD(strata_comm_ops, alltoallv, 112, 8);
PIN_FIELD(strata_comm_ops, split, 120, 8);

/* strata_param_desc */
PIN_STRUCT(strata_param_desc, 56, 8);
PIN_FIELD(strata_param_desc, struct_size, 0, 8);
PIN_FIELD(strata_param_desc, name, 8, 8);
PIN_FIELD(strata_param_desc, dtype, 16, 4);
PIN_FIELD(strata_param_desc, device, 20, 8);
PIN_FIELD(strata_param_desc, count, 32, 8);
PIN_FIELD(strata_param_desc, data, 40, 8);
PIN_FIELD(strata_param_desc, grad, 48, 8);

/* strata_shard */
/* Shards cross in arrays: the stride never changes again (1.7 kept it; the job's device says where
 * they live). */
PIN_STRUCT(strata_shard, 64, 8);
PIN_FIELD(strata_shard, struct_size, 0, 8);
PIN_FIELD(strata_shard, param_index, 8, 4);
PIN_FIELD(strata_shard, offset, 16, 8);
PIN_FIELD(strata_shard, count, 24, 8);
PIN_FIELD(strata_shard, master, 32, 8);
PIN_FIELD(strata_shard, grad, 40, 8);
PIN_FIELD(strata_shard, model, 48, 8);
PIN_FIELD(strata_shard, model_dtype, 56, 4);

/* strata_param_view */
PIN_STRUCT(strata_param_view, 40, 8);
PIN_FIELD(strata_param_view, struct_size, 0, 8);
PIN_FIELD(strata_param_view, data, 8, 8);
PIN_FIELD(strata_param_view, grad, 16, 8);
PIN_FIELD(strata_param_view, count, 24, 8);
PIN_FIELD(strata_param_view, dtype, 32, 4);

/* strata_trace_span (ABI 1.5) */
PIN_STRUCT(strata_trace_span, 56, 8);
PIN_FIELD(strata_trace_span, struct_size, 0, 8);
PIN_FIELD(strata_trace_span, name, 8, 8);
PIN_FIELD(strata_trace_span, begin_ns, 16, 8);
PIN_FIELD(strata_trace_span, end_ns, 24, 8);
PIN_FIELD(strata_trace_span, index, 32, 8);
PIN_FIELD(strata_trace_span, bytes, 40, 8);
PIN_FIELD(strata_trace_span, flags, 48, 4);
PIN_VALUE(STRATA_TRACE_IN_FLIGHT, 1u);

/* strata_host_api */
PIN_STRUCT(strata_host_api, 152, 8);
PIN_FIELD(strata_host_api, struct_size, 0, 8);
PIN_FIELD(strata_host_api, abi_major, 8, 4);
PIN_FIELD(strata_host_api, runtime_minor, 12, 4);
PIN_FIELD(strata_host_api, host_ctx, 16, 8);
PIN_FIELD(strata_host_api, log, 24, 8);
PIN_FIELD(strata_host_api, alloc_bytes, 32, 8);
PIN_FIELD(strata_host_api, free_bytes, 40, 8);
PIN_FIELD(strata_host_api, comm, 48, 8);
PIN_FIELD(strata_host_api, comm_self, 56, 8);
PIN_FIELD(strata_host_api, precision, 64, 8);
PIN_FIELD(strata_host_api, precision_self, 72, 8);
PIN_FIELD(strata_host_api, alloc_bytes_at, 80, 8);
PIN_FIELD(strata_host_api, account_bytes, 88, 8);
PIN_FIELD(strata_host_api, log_enabled, 96, 8);
PIN_FIELD(strata_host_api, trace_enabled, 104, 8);
PIN_FIELD(strata_host_api, trace_span, 112, 8);
PIN_FIELD(strata_host_api, device, 120, 8);      /* ABI 1.7 */
PIN_FIELD(strata_host_api, cuda_stream, 128, 8); /* ABI 1.7 */
PIN_FIELD(strata_host_api, offload, 136, 8);     /* ABI 1.8 */
PIN_FIELD(strata_host_api, offload_self, 144, 8);

/* strata_sharding_caps */
PIN_STRUCT(strata_sharding_caps, 24, 8);
PIN_FIELD(strata_sharding_caps, struct_size, 0, 8);
PIN_FIELD(strata_sharding_caps, stage, 8, 4);
PIN_FIELD(strata_sharding_caps, shards_replicated, 12, 4);
PIN_FIELD(strata_sharding_caps, features, 16, 4); /* 1.9 */

/* strata_grad_ready_args */
PIN_STRUCT(strata_grad_ready_args, 16, 8);
PIN_FIELD(strata_grad_ready_args, struct_size, 0, 8);
PIN_FIELD(strata_grad_ready_args, param_index, 8, 4);
PIN_FIELD(strata_grad_ready_args, boundary, 12, 4);

/* strata_group_args */
PIN_STRUCT(strata_group_args, 16, 8);
PIN_FIELD(strata_group_args, struct_size, 0, 8);
PIN_FIELD(strata_group_args, group, 8, 4);
PIN_FIELD(strata_group_args, flags, 12, 4);

/* strata_micro_step_args */
PIN_STRUCT(strata_micro_step_args, 16, 8);
PIN_FIELD(strata_micro_step_args, struct_size, 0, 8);
PIN_FIELD(strata_micro_step_args, boundary, 8, 4);

/* strata_sharding_ops */
PIN_STRUCT(strata_sharding_ops, 152, 8);
PIN_FIELD(strata_sharding_ops, header, 0, 24);
PIN_FIELD(strata_sharding_ops, create, 24, 8);
PIN_FIELD(strata_sharding_ops, destroy, 32, 8);
PIN_FIELD(strata_sharding_ops, query, 40, 8);
PIN_FIELD(strata_sharding_ops, register_param, 48, 8);
PIN_FIELD(strata_sharding_ops, finalize, 56, 8);
PIN_FIELD(strata_sharding_ops, grad_ready, 64, 8);
PIN_FIELD(strata_sharding_ops, finish_reduce, 72, 8);
PIN_FIELD(strata_sharding_ops, owned_shards, 80, 8);
PIN_FIELD(strata_sharding_ops, publish, 88, 8);
PIN_FIELD(strata_sharding_ops, zero_grad, 96, 8);
PIN_FIELD(strata_sharding_ops, define_group, 104, 8);
PIN_FIELD(strata_sharding_ops, gather, 112, 8);
PIN_FIELD(strata_sharding_ops, release, 120, 8);
PIN_FIELD(strata_sharding_ops, param_view, 128, 8);
PIN_FIELD(strata_sharding_ops, end_micro_step, 136, 8);
PIN_FIELD(strata_sharding_ops, shard_ranges, 144, 8); /* ABI 1.8 */

/* strata_precision_caps */
PIN_STRUCT(strata_precision_caps, 16, 8);
PIN_FIELD(strata_precision_caps, struct_size, 0, 8);
PIN_FIELD(strata_precision_caps, model_dtype, 8, 4);
PIN_FIELD(strata_precision_caps, dynamic_scaling, 12, 4);

/* strata_grad_stats */
PIN_STRUCT(strata_grad_stats, 24, 8);
PIN_FIELD(strata_grad_stats, struct_size, 0, 8);
PIN_FIELD(strata_grad_stats, nonfinite, 8, 4);
PIN_FIELD(strata_grad_stats, sum_sq, 16, 8);

/* strata_precision_ops */
PIN_STRUCT(strata_precision_ops, 96, 8);
PIN_FIELD(strata_precision_ops, header, 0, 24);
PIN_FIELD(strata_precision_ops, create, 24, 8);
PIN_FIELD(strata_precision_ops, destroy, 32, 8);
PIN_FIELD(strata_precision_ops, query, 40, 8);
PIN_FIELD(strata_precision_ops, loss_scale, 48, 8);
PIN_FIELD(strata_precision_ops, grad_stats, 56, 8);
PIN_FIELD(strata_precision_ops, update, 64, 8);
PIN_FIELD(strata_precision_ops, cast, 72, 8);
PIN_FIELD(strata_precision_ops, save_state, 80, 8); /* ABI 1.6 */
PIN_FIELD(strata_precision_ops, load_state, 88, 8);

/* strata_offload_caps */
PIN_STRUCT(strata_offload_caps, 48, 8);
PIN_FIELD(strata_offload_caps, struct_size, 0, 8);
PIN_FIELD(strata_offload_caps, device_type, 8, 4);
PIN_FIELD(strata_offload_caps, optimizer, 16, 8);
PIN_FIELD(strata_offload_caps, writes_model_copy, 24, 4);
PIN_FIELD(strata_offload_caps, lr, 32, 8); /* ABI 1.6 */
PIN_FIELD(strata_offload_caps, momentum, 40, 8);

/* strata_step_args */
PIN_STRUCT(strata_step_args, 56, 8);
PIN_FIELD(strata_step_args, struct_size, 0, 8);
PIN_FIELD(strata_step_args, step, 8, 8);
PIN_FIELD(strata_step_args, grad_scale, 16, 8);
PIN_FIELD(strata_step_args, lr_factor, 24, 8);
PIN_FIELD(strata_step_args, lr, 32, 8); /* ABI 1.6 */
PIN_FIELD(strata_step_args, momentum, 40, 8);
PIN_FIELD(strata_step_args, beta2, 48, 8);

/* strata_state_slots (ABI 1.6) */
PIN_STRUCT(strata_state_slots, 24, 8);
PIN_FIELD(strata_state_slots, struct_size, 0, 8);
PIN_FIELD(strata_state_slots, count, 8, 4);
PIN_FIELD(strata_state_slots, names, 16, 8);

/* strata_state_io_args (ABI 1.6) */
PIN_STRUCT(strata_state_io_args, 40, 8);
PIN_FIELD(strata_state_io_args, struct_size, 0, 8);
PIN_FIELD(strata_state_io_args, shard, 8, 4);
PIN_FIELD(strata_state_io_args, slot, 12, 4);
PIN_FIELD(strata_state_io_args, first, 16, 8);
PIN_FIELD(strata_state_io_args, count, 24, 8);
PIN_FIELD(strata_state_io_args, data, 32, 8);

/* strata_param_store_args (ABI 1.8) */
PIN_STRUCT(strata_param_store_args, 40, 8);
PIN_FIELD(strata_param_store_args, struct_size, 0, 8);
PIN_FIELD(strata_param_store_args, bytes, 8, 8);
PIN_FIELD(strata_param_store_args, location, 16, 4);
PIN_FIELD(strata_param_store_args, data, 24, 8);
PIN_FIELD(strata_param_store_args, read_ahead_elements, 32, 8);

/* strata_param_io_args (ABI 1.8) */
PIN_STRUCT(strata_param_io_args, 40, 8);
PIN_FIELD(strata_param_io_args, struct_size, 0, 8);
PIN_FIELD(strata_param_io_args, write, 8, 4);
PIN_FIELD(strata_param_io_args, offset, 16, 8);
PIN_FIELD(strata_param_io_args, bytes, 24, 8);
PIN_FIELD(strata_param_io_args, data, 32, 8);

/* strata_offload_ops */
PIN_STRUCT(strata_offload_ops, 128, 8);
PIN_FIELD(strata_offload_ops, header, 0, 24);
PIN_FIELD(strata_offload_ops, create, 24, 8);
PIN_FIELD(strata_offload_ops, destroy, 32, 8);
PIN_FIELD(strata_offload_ops, query, 40, 8);
PIN_FIELD(strata_offload_ops, init_state, 48, 8);
PIN_FIELD(strata_offload_ops, step, 56, 8);
PIN_FIELD(strata_offload_ops, state_slots, 64, 8); /* ABI 1.6 */
PIN_FIELD(strata_offload_ops, read_state, 72, 8);
PIN_FIELD(strata_offload_ops, write_state, 80, 8);
PIN_FIELD(strata_offload_ops, save_state, 88, 8);
PIN_FIELD(strata_offload_ops, load_state, 96, 8);
PIN_FIELD(strata_offload_ops, param_store_open, 104, 8); /* ABI 1.8 */
PIN_FIELD(strata_offload_ops, param_store_start, 112, 8);
PIN_FIELD(strata_offload_ops, param_store_wait, 120, 8);

/* strata_create_options */
PIN_STRUCT(strata_create_options, 40, 8);
PIN_FIELD(strata_create_options, struct_size, 0, 8);
PIN_FIELD(strata_create_options, manifest_path, 8, 8);
PIN_FIELD(strata_create_options, manifest_json, 16, 8);
PIN_FIELD(strata_create_options, base_dir, 24, 8);
PIN_FIELD(strata_create_options, overrides_json, 32, 8);

/* strata_world_info */
PIN_STRUCT(strata_world_info, 24, 8);
PIN_FIELD(strata_world_info, struct_size, 0, 8);
PIN_FIELD(strata_world_info, rank, 8, 4);
PIN_FIELD(strata_world_info, size, 12, 4);
PIN_FIELD(strata_world_info, local_rank, 16, 4);
PIN_FIELD(strata_world_info, local_size, 20, 4);

/* strata_training_info */
PIN_STRUCT(strata_training_info, 48, 8);
PIN_FIELD(strata_training_info, struct_size, 0, 8);
PIN_FIELD(strata_training_info, train_batch_size, 8, 8);
PIN_FIELD(strata_training_info, micro_batch_size, 16, 8);
PIN_FIELD(strata_training_info, gradient_accumulation_steps, 24, 8);
PIN_FIELD(strata_training_info, gradient_clipping, 32, 8);
PIN_FIELD(strata_training_info, model_dtype, 40, 4);

/* strata_step_result */
PIN_STRUCT(strata_step_result, 96, 8);
PIN_FIELD(strata_step_result, struct_size, 0, 8);
PIN_FIELD(strata_step_result, outcome, 8, 4);
PIN_FIELD(strata_step_result, loss_scale, 16, 8);
PIN_FIELD(strata_step_result, grad_norm, 24, 8);
PIN_FIELD(strata_step_result, global_steps, 32, 8);
PIN_FIELD(strata_step_result, skipped_steps, 40, 8);
PIN_FIELD(strata_step_result, wall_seconds, 48, 8);
PIN_FIELD(strata_step_result, host_seconds, 56, 8);
PIN_FIELD(strata_step_result, comm_wait_seconds, 64, 8);
PIN_FIELD(strata_step_result, optimizer_seconds, 72, 8);
PIN_FIELD(strata_step_result, gather_seconds, 80, 8);
PIN_FIELD(strata_step_result, runtime_other_seconds, 88, 8);

/* strata_memory_report */
PIN_STRUCT(strata_memory_report, 296, 8);
PIN_FIELD(strata_memory_report, struct_size, 0, 8);
PIN_FIELD(strata_memory_report, current, 8, 48);
PIN_FIELD(strata_memory_report, peak, 56, 48);
PIN_FIELD(strata_memory_report, located, 104, 192);

/* strata_status */
PIN_VALUE(STRATA_OK, 0);
PIN_VALUE(STRATA_ERR_INVALID_ARGUMENT, 1);
PIN_VALUE(STRATA_ERR_UNSUPPORTED, 2);
PIN_VALUE(STRATA_ERR_OUT_OF_MEMORY, 3);
PIN_VALUE(STRATA_ERR_COMM, 4);
PIN_VALUE(STRATA_ERR_MISMATCH, 5);
PIN_VALUE(STRATA_ERR_NUMERIC, 6);
PIN_VALUE(STRATA_ERR_INTERNAL, 7);
PIN_VALUE(STRATA_ERR_ABI, 8);

/* strata_dtype */
PIN_VALUE(STRATA_F32, 0);
PIN_VALUE(STRATA_F16, 1);
PIN_VALUE(STRATA_BF16, 2);
PIN_VALUE(STRATA_F64, 3);
PIN_VALUE(STRATA_I32, 4);
PIN_VALUE(STRATA_I64, 5);
PIN_VALUE(STRATA_U8, 6);
PIN_VALUE(STRATA_DTYPE_COUNT, 7);

/* strata_device_type */
PIN_VALUE(STRATA_DEVICE_HOST, 0);
PIN_VALUE(STRATA_DEVICE_CUDA, 1);

/* strata_plugin_kind */
PIN_VALUE(STRATA_PLUGIN_COMM, 1);
PIN_VALUE(STRATA_PLUGIN_SHARDING, 2);
PIN_VALUE(STRATA_PLUGIN_PRECISION, 3);
PIN_VALUE(STRATA_PLUGIN_OFFLOAD, 4);

/* strata_log_level */
PIN_VALUE(STRATA_LOG_TRACE, 0);
PIN_VALUE(STRATA_LOG_DEBUG, 1);
PIN_VALUE(STRATA_LOG_INFO, 2);
PIN_VALUE(STRATA_LOG_WARN, 3);
PIN_VALUE(STRATA_LOG_ERROR, 4);

/* strata_mem_category */
PIN_VALUE(STRATA_MEM_PARAMS, 0);
PIN_VALUE(STRATA_MEM_GRADS, 1);
PIN_VALUE(STRATA_MEM_MASTER, 2);
PIN_VALUE(STRATA_MEM_OPTIMIZER_STATE, 3);
PIN_VALUE(STRATA_MEM_COMM_BUFFERS, 4);
PIN_VALUE(STRATA_MEM_OTHER, 5);
PIN_VALUE(STRATA_MEM_CATEGORY_COUNT, 6);

/* strata_mem_location */
PIN_VALUE(STRATA_MEM_HOST, 0);
PIN_VALUE(STRATA_MEM_HOST_PINNED, 1);
PIN_VALUE(STRATA_MEM_DEVICE, 2);
PIN_VALUE(STRATA_MEM_DISK, 3);
PIN_VALUE(STRATA_MEM_LOCATION_COUNT, 4);

/* strata_reduce_op */
PIN_VALUE(STRATA_SUM, 0);
PIN_VALUE(STRATA_AVG, 1);
PIN_VALUE(STRATA_MIN, 2);
PIN_VALUE(STRATA_MAX, 3);

/* strata_collective */
PIN_VALUE(STRATA_COLL_ALLREDUCE, 0);
PIN_VALUE(STRATA_COLL_ALLGATHER, 1);
PIN_VALUE(STRATA_COLL_ALLGATHERV, 2);
PIN_VALUE(STRATA_COLL_REDUCE_SCATTER, 3);
PIN_VALUE(STRATA_COLL_BROADCAST, 4);
PIN_VALUE(STRATA_COLL_BARRIER, 5);

/* strata_step_outcome */
PIN_VALUE(STRATA_STEP_ACCUMULATED, 0);
PIN_VALUE(STRATA_STEP_APPLIED, 1);
PIN_VALUE(STRATA_STEP_SKIPPED, 2);


/* The first released (and grown) sizes, STRATA_<NAME>_SIZE_1_<m>: a macro that names another
 * last field changes what a reader accepts. The 1.0 and 1.2 ones equal offsetof + sizeof of the
 * last field in the frozen header (plugin-api/legacy) as release 1.0 and 1.2; the adapter checks
 * this for the structs it hands across (runtime/src/legacy_abi/legacy_api.hpp). */
PIN_VALUE(STRATA_BUFFER_SIZE_1_0, 36);
PIN_VALUE(STRATA_COLL_ARGS_SIZE_1_3, 48);
PIN_VALUE(STRATA_COLL_ARGS_SIZE_1_10, 64);
PIN_VALUE(STRATA_COMM_CAPS_SIZE_1_0, 40);
PIN_VALUE(STRATA_COMM_CAPS_SIZE_1_10, 44);
PIN_VALUE(STRATA_COMM_OPS_SIZE_1_3, 112);
PIN_VALUE(STRATA_COMM_OPS_SIZE_1_10, 128);
PIN_VALUE(STRATA_COMM_SPLIT_ARGS_SIZE_1_10, 16);
PIN_VALUE(STRATA_CREATE_OPTIONS_SIZE_1_0, 40);
PIN_VALUE(STRATA_ERROR_SIZE_1_0, 1036);
PIN_VALUE(STRATA_GRAD_READY_ARGS_SIZE_1_3, 16);
PIN_VALUE(STRATA_GRAD_STATS_SIZE_1_0, 24);
PIN_VALUE(STRATA_GROUP_ARGS_SIZE_1_3, 16);
PIN_VALUE(STRATA_HOST_API_SIZE_1_0, 80);
PIN_VALUE(STRATA_HOST_API_SIZE_1_2, 96);
PIN_VALUE(STRATA_HOST_API_SIZE_1_4, 104);
PIN_VALUE(STRATA_HOST_API_SIZE_1_5, 120);
PIN_VALUE(STRATA_HOST_API_SIZE_1_7, 136);
PIN_VALUE(STRATA_HOST_API_SIZE_1_8, 152);
PIN_VALUE(STRATA_LOAD_ARGS_SIZE_1_6, 24);
PIN_VALUE(STRATA_LOAD_RESULT_SIZE_1_6, 40);
PIN_VALUE(STRATA_MEMORY_REPORT_SIZE_1_0, 104);
PIN_VALUE(STRATA_MEMORY_REPORT_SIZE_1_2, 296);
PIN_VALUE(STRATA_MICRO_STEP_ARGS_SIZE_1_3, 12);
PIN_VALUE(STRATA_OFFLOAD_CAPS_SIZE_1_0, 24);
PIN_VALUE(STRATA_OFFLOAD_CAPS_SIZE_1_2, 28);
PIN_VALUE(STRATA_OFFLOAD_CAPS_SIZE_1_6, 48);
PIN_VALUE(STRATA_OFFLOAD_OPS_SIZE_1_3, 64);
PIN_VALUE(STRATA_OFFLOAD_OPS_SIZE_1_8, 128);
PIN_VALUE(STRATA_OPS_HEADER_SIZE_1_3, 24);
PIN_VALUE(STRATA_PARAM_DESC_SIZE_1_0, 56);
PIN_VALUE(STRATA_PARAM_IO_ARGS_SIZE_1_8, 40);
PIN_VALUE(STRATA_PARAM_STORE_ARGS_SIZE_1_8, 40);
PIN_VALUE(STRATA_PARAM_VIEW_SIZE_1_1, 36);
PIN_VALUE(STRATA_PLUGIN_CREATE_ARGS_SIZE_1_3, 24);
PIN_VALUE(STRATA_PLUGIN_DESCRIPTOR_SIZE_1_0, 56);
PIN_VALUE(STRATA_PRECISION_CAPS_SIZE_1_0, 16);
PIN_VALUE(STRATA_PRECISION_OPS_SIZE_1_3, 80);
PIN_VALUE(STRATA_SAVE_ARGS_SIZE_1_6, 36);
PIN_VALUE(STRATA_SHARDING_CAPS_SIZE_1_0, 16);
PIN_VALUE(STRATA_SHARDING_CAPS_SIZE_1_9, 20);
PIN_VALUE(STRATA_SHARDING_OPS_SIZE_1_3, 144);
PIN_VALUE(STRATA_SHARD_SIZE_1_0, 48);
PIN_VALUE(STRATA_SHARD_SIZE_1_2, 60);
PIN_VALUE(STRATA_STATE_IO_ARGS_SIZE_1_6, 40);
PIN_VALUE(STRATA_STATE_SLOTS_SIZE_1_6, 24);
PIN_VALUE(STRATA_STEP_ARGS_SIZE_1_0, 32);
PIN_VALUE(STRATA_STEP_ARGS_SIZE_1_6, 56);
PIN_VALUE(STRATA_STEP_RESULT_SIZE_1_0, 48);
PIN_VALUE(STRATA_STEP_RESULT_SIZE_1_5, 96);
PIN_VALUE(STRATA_TRACE_SPAN_SIZE_1_5, 52);
PIN_VALUE(STRATA_TRAINING_INFO_SIZE_1_0, 44);
PIN_VALUE(STRATA_WORLD_INFO_SIZE_1_0, 24);
#else
#define STRATA_LAYOUT_PINNED 0
#endif

int strata_abi_layout_pinned(void) { return STRATA_LAYOUT_PINNED; }
