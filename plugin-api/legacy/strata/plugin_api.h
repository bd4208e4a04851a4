/*
 * FROZEN: strata/plugin_api.h as ABI 1.0, 1.1 and 1.2 released it, kept for the runtime's adapter
 * (runtime/src/legacy_abi) and the compatibility tests (tests/abi/compat). Never installed, never
 * edited; see plugin-api/legacy/README.md. The text is 1.2's. STRATA_LEGACY_ABI_MINOR (0, 1 or 2,
 * the default) picks the release: the declarations a later minor added are inside
 * `#if STRATA_LEGACY_ABI_MINOR >= m`, so a build with minor m sees exactly that release's layouts.
 * The include guard is this copy's own, so that the adapter can include it beside today's header.
 *
 * strata/plugin_api.h — the one header a Strata plugin needs. C99, stable ABI.
 *
 * Rules (see DESIGN.md, "ABI rules"):
 *  - A plugin library exports exactly one symbol, strata_plugin_entry_v1, returning a const
 *    descriptor that lives as long as the library stays loaded.
 *  - ABI major must match STRATA_ABI_MAJOR exactly; the plugin's minor is a floor the host must meet.
 *  - Every struct crossing the boundary starts with `size_t struct_size`. Fields are only appended.
 *    A reader uses only the fields that lie inside the struct_size it was handed.
 *  - Functions return a strata_status; on failure they write a readable sentence into the caller's
 *    strata_error (which may be NULL). No exception, C++ type or allocation ownership crosses.
 *    Whoever allocates frees.
 *  - Lifetimes and thread-safety are written beside each function.
 */
#ifndef STRATA_LEGACY_PLUGIN_API_H
#define STRATA_LEGACY_PLUGIN_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef STRATA_LEGACY_ABI_MINOR
#define STRATA_LEGACY_ABI_MINOR 2
#endif
#if STRATA_LEGACY_ABI_MINOR < 0 || STRATA_LEGACY_ABI_MINOR > 2
#error "STRATA_LEGACY_ABI_MINOR: this frozen header holds the 1.0, 1.1 and 1.2 releases only"
#endif

#define STRATA_ABI_MAJOR 1
#define STRATA_ABI_MINOR STRATA_LEGACY_ABI_MINOR /* 1.1: parameter groups, gather/release, views; 1.2: memory locations */

/* Name of the single exported entry symbol. A major bump introduces strata_plugin_entry_v2. */
#define STRATA_PLUGIN_ENTRY_SYMBOL "strata_plugin_entry_v1"

/* Convenience for readers: is `field` of struct `type` inside the size the writer gave? */
#define STRATA_STRUCT_HAS(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* ------------------------------------------------------------------------------------------ */
/* Status and errors                                                                          */
/* ------------------------------------------------------------------------------------------ */

typedef enum strata_status {
  STRATA_OK = 0,
  STRATA_ERR_INVALID_ARGUMENT = 1, /* bad config value or call argument */
  STRATA_ERR_UNSUPPORTED = 2,      /* a capability this plugin does not have */
  STRATA_ERR_OUT_OF_MEMORY = 3,
  STRATA_ERR_COMM = 4,             /* a collective failed or peers disagree */
  STRATA_ERR_MISMATCH = 5,         /* ranks submitted different things */
  STRATA_ERR_NUMERIC = 6,          /* e.g. loss scale cannot decrease any further */
  STRATA_ERR_INTERNAL = 7,
  STRATA_ERR_ABI = 8               /* version or struct-size mismatch */
} strata_status;

#define STRATA_ERROR_MESSAGE_MAX 1024

/* Caller-owned error record. The callee writes `code` and a NUL-terminated one-line `message`
 * (truncated to fit). Callers initialise struct_size = sizeof(strata_error). */
typedef struct strata_error {
  size_t struct_size;
  int32_t code; /* a strata_status */
  char message[STRATA_ERROR_MESSAGE_MAX];
} strata_error;

/* ------------------------------------------------------------------------------------------ */
/* Data types, devices, buffers                                                               */
/* ------------------------------------------------------------------------------------------ */

typedef enum strata_dtype {
  STRATA_F32 = 0,
  STRATA_F16 = 1,
  STRATA_BF16 = 2,
  STRATA_F64 = 3,
  STRATA_I32 = 4,
  STRATA_I64 = 5,
  STRATA_U8 = 6,
  STRATA_DTYPE_COUNT = 7
} strata_dtype;

#define STRATA_DTYPE_BIT(d) (1u << (unsigned)(d))

typedef enum strata_device_type {
  STRATA_DEVICE_HOST = 0,
  STRATA_DEVICE_CUDA = 1
} strata_device_type;

#define STRATA_DEVICE_BIT(t) (1u << (unsigned)(t))

typedef struct strata_device {
  int32_t type;  /* strata_device_type */
  int32_t index; /* CUDA ordinal; 0 for host */
} strata_device;

/* A view of memory someone else owns. The descriptor itself is only read during the call. */
typedef struct strata_buffer {
  size_t struct_size;
  void* data;
  uint64_t count; /* elements, not bytes */
  int32_t dtype;  /* strata_dtype */
  strata_device device;
} strata_buffer;

/* ------------------------------------------------------------------------------------------ */
/* Plugin kinds and descriptor                                                                */
/* ------------------------------------------------------------------------------------------ */

typedef enum strata_plugin_kind {
  STRATA_PLUGIN_COMM = 1,
  STRATA_PLUGIN_SHARDING = 2,
  STRATA_PLUGIN_PRECISION = 3,
  STRATA_PLUGIN_OFFLOAD = 4
} strata_plugin_kind;

/* Returned by strata_plugin_entry_v1. Static storage; valid while the library is loaded.
 * `ops` points at the operation table of `kind` (strata_comm_ops, ...), whose own struct_size
 * the host checks. */
typedef struct strata_plugin_descriptor {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  int32_t kind;            /* strata_plugin_kind */
  const char* name;        /* e.g. "allreduce-mpi" */
  const char* version;     /* the plugin's own version string */
  const char* description; /* one line, for logs */
  const void* ops;
} strata_plugin_descriptor;

/* ------------------------------------------------------------------------------------------ */
/* Logging and memory categories (used by the host-services table)                            */
/* ------------------------------------------------------------------------------------------ */

typedef enum strata_log_level {
  STRATA_LOG_TRACE = 0,
  STRATA_LOG_DEBUG = 1,
  STRATA_LOG_INFO = 2,
  STRATA_LOG_WARN = 3,
  STRATA_LOG_ERROR = 4
} strata_log_level;

/* What accounted memory holds; the runtime reports bytes per category and rank. */
typedef enum strata_mem_category {
  STRATA_MEM_PARAMS = 0,          /* model parameters in the model dtype */
  STRATA_MEM_GRADS = 1,           /* gradients (model dtype or fp32 shards) */
  STRATA_MEM_MASTER = 2,          /* fp32 master copy of parameters */
  STRATA_MEM_OPTIMIZER_STATE = 3, /* momentum, Adam moments, ... */
  STRATA_MEM_COMM_BUFFERS = 4,    /* fusion buckets, staging */
  STRATA_MEM_OTHER = 5,
  STRATA_MEM_CATEGORY_COUNT = 6
} strata_mem_category;

#if STRATA_LEGACY_ABI_MINOR >= 2
/* Where accounted bytes live (ABI 1.2). The memory report gives bytes per location and category;
 * its per-category totals count memory only (host, pinned and device), never disk. */
typedef enum strata_mem_location {
  STRATA_MEM_HOST = 0,        /* pageable host memory */
  STRATA_MEM_HOST_PINNED = 1, /* page-locked host memory (never swapped; DMA-able) */
  STRATA_MEM_DEVICE = 2,      /* accelerator memory */
  STRATA_MEM_DISK = 3,        /* bytes held in files, e.g. optimizer state offloaded to NVMe */
  STRATA_MEM_LOCATION_COUNT = 4
} strata_mem_location;
#endif

/* ------------------------------------------------------------------------------------------ */
/* Communication stratum                                                                      */
/* ------------------------------------------------------------------------------------------ */

typedef enum strata_reduce_op {
  STRATA_SUM = 0,
  STRATA_AVG = 1, /* SUM divided by world size (integers: truncating division) */
  STRATA_MIN = 2,
  STRATA_MAX = 3
} strata_reduce_op;

typedef enum strata_collective {
  STRATA_COLL_ALLREDUCE = 0,
  STRATA_COLL_ALLGATHER = 1,
  STRATA_COLL_ALLGATHERV = 2,
  STRATA_COLL_REDUCE_SCATTER = 3,
  STRATA_COLL_BROADCAST = 4,
  STRATA_COLL_BARRIER = 5
} strata_collective;

#define STRATA_COLL_BIT(c) (1u << (unsigned)(c))

/* An in-flight non-blocking collective. Owned by the comm plugin from the call that returns it
 * until the wait() that completes it; the buffers it names must stay valid until then. */
typedef struct strata_request_s* strata_request;

struct strata_host_api; /* defined below; passed to every create() */

typedef struct strata_comm_caps {
  size_t struct_size;
  int32_t rank;
  int32_t size;
  int32_t local_rank; /* rank among the processes on this node */
  int32_t local_size;
  uint32_t dtype_mask;      /* STRATA_DTYPE_BIT of each supported dtype */
  uint32_t collective_mask; /* STRATA_COLL_BIT of each supported collective */
  uint32_t device_mask;     /* STRATA_DEVICE_BIT of each device type whose memory it can move */
  int32_t nonblocking;      /* 1 if `req` may be non-NULL */
} strata_comm_caps;

/*
 * Collectives. Common contract:
 *  - Every rank calls the same collectives in the same order with matching counts and dtypes.
 *  - `send` and `recv` may be the same buffer (in place) where it makes sense.
 *  - If `req` is NULL the call blocks until the result is in `recv`. Otherwise it starts the
 *    collective, stores a handle in *req and returns; the result is valid after wait(*req).
 *  - f16/bf16 reductions accumulate in f32.
 *  - Thread-safety: one thread at a time per instance (the runtime serialises calls).
 */
typedef struct strata_comm_ops {
  size_t struct_size;

  /* Creates an instance. `config_json` is a JSON object text (valid for the call only); `host`
   * lives until destroy. On success *self is owned by the caller until destroy(self).
   * May initialise the process-wide transport (e.g. MPI_Init) if nobody did. Not thread-safe. */
  strata_status (*create)(const char* config_json, const struct strata_host_api* host,
                          void** self, strata_error* err);
  /* Releases everything; pending requests must have been waited. self may be NULL. */
  void (*destroy)(void* self);
  /* Fills *caps (caps->struct_size set by the caller). Cheap; any time after create. */
  strata_status (*query)(void* self, strata_comm_caps* caps, strata_error* err);

  /* recv.count == send.count. */
  strata_status (*allreduce)(void* self, const strata_buffer* send, const strata_buffer* recv,
                             int32_t op, strata_request* req, strata_error* err);
  /* recv.count == send.count * size; rank r's block lands at offset r * send.count. */
  strata_status (*allgather)(void* self, const strata_buffer* send, const strata_buffer* recv,
                             strata_request* req, strata_error* err);
  /* recv_counts[r] / displs[r] (elements, `size` entries, read during the call only) place
   * rank r's block; send.count must equal recv_counts[rank]. */
  strata_status (*allgatherv)(void* self, const strata_buffer* send, const strata_buffer* recv,
                              const uint64_t* recv_counts, const uint64_t* displs,
                              strata_request* req, strata_error* err);
  /* send.count == recv.count * size; rank r receives the reduction of block r. */
  strata_status (*reduce_scatter)(void* self, const strata_buffer* send,
                                  const strata_buffer* recv, int32_t op, strata_request* req,
                                  strata_error* err);
  /* In place on `buf`, from `root`. */
  strata_status (*broadcast)(void* self, const strata_buffer* buf, int32_t root,
                             strata_request* req, strata_error* err);
  strata_status (*barrier)(void* self, strata_request* req, strata_error* err);

  /* Completes and frees a request. After it returns (success or not) the handle is invalid. */
  strata_status (*wait)(void* self, strata_request req, strata_error* err);
  /* *done = 1 if the request has completed (it must still be waited to free it). */
  strata_status (*test)(void* self, strata_request req, int32_t* done, strata_error* err);
} strata_comm_ops;

/* ------------------------------------------------------------------------------------------ */
/* Shared types for the training strata                                                       */
/* ------------------------------------------------------------------------------------------ */

/* A parameter as the training host registered it. `name` is only valid during the call that
 * passes it (copy it). `data` holds the initial values and is read at finalize; whether the host's
 * buffers stay in use afterwards is the sharding plugin's business and shows in param_view (ABI
 * 1.1): at ZeRO stages 0-2 `data` is the live parameter, at stage 3 partitioned parameters live in
 * the plugin. `grad` may be NULL (ABI 1.1): the sharding plugin then provides gradient storage,
 * reached through param_view. Non-NULL host buffers stay valid until the runtime is destroyed. */
typedef struct strata_param_desc {
  size_t struct_size;
  const char* name;
  int32_t dtype; /* model dtype of data and grad */
  strata_device device;
  uint64_t count;
  void* data;
  void* grad;
} strata_param_desc;

/* A contiguous range of one parameter that this rank owns for the optimizer step. `master` and
 * `grad` are fp32 and owned by the sharding plugin (at stage 0 with fp32 models they may alias the
 * host's own buffers). Valid from finish_reduce until the next call that changes sharding state. */
typedef struct strata_shard {
  size_t struct_size;
  uint32_t param_index;
  uint64_t offset; /* first element of the range within the parameter */
  uint64_t count;
  float* master;
  float* grad;
#if STRATA_LEGACY_ABI_MINOR >= 2
  /* ABI 1.2: where the updated master's model-dtype copy goes (`count` elements of
   * `model_dtype`, STRATA_F16 or STRATA_BF16), or NULL when the sharding plugin rounds the masters
   * itself in publish. When set, the copy is made between step and publish: by the offload plugin
   * in its own pass if its caps say writes_model_copy, else by the runtime (precision cast). */
  void* model;
  int32_t model_dtype;
#endif
} strata_shard;

#if STRATA_LEGACY_ABI_MINOR >= 1
/* Where the host reads a parameter and writes its gradient right now (ABI 1.1). Filled by
 * param_view; the pointers stay valid until the next gather/release/step call on the runtime, or
 * for longer where the sharding stage says so (stages 0-1: until destroy). */
typedef struct strata_param_view {
  size_t struct_size;
  void* data;     /* `count` elements of `dtype`; NULL if the parameter is not gathered (stage 3) */
  void* grad;     /* accumulate (+=) this micro-batch's gradient here; NULL if none is lent now */
  uint64_t count;
  int32_t dtype;
} strata_param_view;

/* gather() flags. FOR_BACKWARD: the host will write gradients of the group's parameters; the
 * plugin lends zeroed gradient buffers where it owns gradient storage, and release() reduces them. */
#define STRATA_GATHER_FOR_BACKWARD 1u
#endif

/* ------------------------------------------------------------------------------------------ */
/* Host services: what the runtime lends every plugin at create time                           */
/* ------------------------------------------------------------------------------------------ */

struct strata_precision_ops;

/* One table per plugin instance, valid from create until destroy. Functions are thread-safe unless
 * noted. `comm`/`precision` are NULL for strata created before them (comm itself gets neither). */
typedef struct strata_host_api {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  void* host_ctx; /* first argument to every function below */

  /* Writes one log line attributed to this plugin and rank. `message` read during the call. */
  void (*log)(void* host_ctx, int32_t level, const char* message);
  /* Accounted allocation: counted under `category` in the memory report. Returns NULL on
   * failure. Host memory only in ABI 1.0. Free with free_bytes from the same table. */
  void* (*alloc_bytes)(void* host_ctx, size_t bytes, size_t alignment, int32_t category);
  void (*free_bytes)(void* host_ctx, void* ptr);

  /* The comm stratum's instance, for collectives (same thread rules as strata_comm_ops). */
  const strata_comm_ops* comm;
  void* comm_self;

  /* The precision stratum's instance, for casts (sharding uses it to publish). */
  const struct strata_precision_ops* precision;
  void* precision_self;

#if STRATA_LEGACY_ABI_MINOR >= 2
  /* ---- ABI 1.2: memory locations. Check with STRATA_STRUCT_HAS before calling. ---- */
  /* Accounted allocation in `location`: STRATA_MEM_HOST (as alloc_bytes) or STRATA_MEM_HOST_PINNED
   * (page-locked with mlock). Returns NULL on failure, including when the system refuses to lock
   * the pages (RLIMIT_MEMLOCK); the caller may then fall back to STRATA_MEM_HOST. Free with
   * free_bytes, which unlocks. Thread-safe. */
  void* (*alloc_bytes_at)(void* host_ctx, size_t bytes, size_t alignment, int32_t category,
                          int32_t location);
  /* Counts bytes the plugin holds outside the allocator, chiefly files (STRATA_MEM_DISK): adds
   * `delta` (negative to give back) to `category` at `location`. The plugin gives back what it
   * recorded before destroy returns. Thread-safe. */
  void (*account_bytes)(void* host_ctx, int32_t category, int32_t location, int64_t delta);
#endif
} strata_host_api;

/* ------------------------------------------------------------------------------------------ */
/* Sharding stratum: who holds which part of params, grads and optimizer state                */
/* ------------------------------------------------------------------------------------------ */

typedef struct strata_sharding_caps {
  size_t struct_size;
  int32_t stage; /* ZeRO stage 0..3 */
  /* 1 if every rank's owned shards cover the whole model identically (stage 0): reductions of
   * per-shard statistics across ranks are then unnecessary. 0 if shards partition the model. */
  int32_t shards_replicated;
} strata_sharding_caps;

/* Call order: create → register_param* → define_group* → finalize → { (gather | grad_ready |
 * release)* → end_micro_step → [finish_reduce → owned_shards → publish → zero_grad] }* → destroy.
 * One thread at a time per instance. */
typedef struct strata_sharding_ops {
  size_t struct_size;
  strata_status (*create)(const char* config_json, const strata_host_api* host, void** self,
                          strata_error* err);
  void (*destroy)(void* self);
  strata_status (*query)(void* self, strata_sharding_caps* caps, strata_error* err);

  /* Indices are dense, 0.., in registration order (the same on every rank). */
  strata_status (*register_param)(void* self, uint32_t index, const strata_param_desc* param,
                                  strata_error* err);
  /* All parameters registered and broadcast; allocate masters, buckets, partitions. Collective. */
  strata_status (*finalize)(void* self, strata_error* err);
  /* The host finished writing (accumulating into) param `index`'s gradient for this micro-batch.
   * `boundary` is 1 on the last micro-batch before an optimizer step. May start collectives. */
  strata_status (*grad_ready)(void* self, uint32_t index, int32_t boundary, strata_error* err);
  /* At the boundary: complete every reduction (including params never marked ready), averaged
   * over ranks. Afterwards owned shards hold the reduced fp32 gradient. Collective. */
  strata_status (*finish_reduce)(void* self, strata_error* err);
  /* The ranges this rank steps. *shards stays owned by the plugin, valid until the next call
   * on this instance other than owned_shards. */
  strata_status (*owned_shards)(void* self, const strata_shard** shards, size_t* count,
                                strata_error* err);
  /* After the optimizer updated the masters: make model parameters current wherever the stage
   * needs them (cast through host->precision, allgather). Collective. */
  strata_status (*publish)(void* self, strata_error* err);
  /* Zero the host's gradient buffers and any gradient shards, ready for the next micro-batch. */
  strata_status (*zero_grad)(void* self, strata_error* err);

#if STRATA_LEGACY_ABI_MINOR >= 1
  /* ---- ABI 1.1: parameter groups (a layer), chiefly for stage 3. A host uses these only if the
   * ops table's struct_size covers them; without them it uses the registered buffers. ---- */

  /* Before finalize. Group ids are dense, 0.., in definition order (the same on every rank). A
   * parameter belongs to at most one group; `params` and `name` are read during the call only. */
  strata_status (*define_group)(void* self, uint32_t group, const char* name,
                                const uint32_t* params, size_t count, strata_error* err);
  /* Makes the group's parameters readable (stage 3: allgather, possibly prefetched) and, with
   * STRATA_GATHER_FOR_BACKWARD, lends gradient buffers. Collective at stage 3 (every rank gathers
   * and releases the same groups in the same order; a divergence is an error naming the ranks and
   * groups, never a hang); local at stages 0-2. */
  strata_status (*gather)(void* self, uint32_t group, uint32_t flags, strata_error* err);
  /* Ends the host's use of the group: lent gradients are reduced towards their owners' shards and
   * their buffers reclaimed; stage 3 frees the gathered parameters. Same collectiveness as gather. */
  strata_status (*release)(void* self, uint32_t group, strata_error* err);
  /* Current buffers of parameter `index` (see strata_param_view). Local. After finalize it fails
   * only for a bad index; what is not available now is reported as NULL. */
  strata_status (*param_view)(void* self, uint32_t index, strata_param_view* view,
                              strata_error* err);
  /* After every micro-batch, before finish_reduce at a boundary (`boundary` = 1). Stages that
   * reduce every micro-batch (2, 3) complete that micro-batch's reductions here. Collective. */
  strata_status (*end_micro_step)(void* self, int32_t boundary, strata_error* err);
#endif
} strata_sharding_ops;

/* ------------------------------------------------------------------------------------------ */
/* Precision stratum: model number format and loss scaling                                    */
/* ------------------------------------------------------------------------------------------ */

typedef struct strata_precision_caps {
  size_t struct_size;
  int32_t model_dtype;     /* dtype the host must register parameters in */
  int32_t dynamic_scaling; /* 1 if the scale changes with overflows */
} strata_precision_caps;

typedef struct strata_grad_stats {
  size_t struct_size;
  int32_t nonfinite; /* 1 if any inspected gradient element is inf or nan */
  double sum_sq;     /* sum of squares of the inspected (still scaled) gradients, in fp64 */
} strata_grad_stats;

typedef struct strata_precision_ops {
  size_t struct_size;
  strata_status (*create)(const char* config_json, const strata_host_api* host, void** self,
                          strata_error* err);
  void (*destroy)(void* self);
  strata_status (*query)(void* self, strata_precision_caps* caps, strata_error* err);

  /* Current loss scale the host multiplies its loss by (1.0 when not scaling). */
  strata_status (*loss_scale)(void* self, double* scale, strata_error* err);
  /* One pass over the owned fp32 gradients: non-finite flag and fp64 sum of squares. Read-only. */
  strata_status (*grad_stats)(void* self, const strata_shard* shards, size_t count,
                              strata_grad_stats* stats, strata_error* err);
  /* Once per optimizer step, skipped or not, with the agreed overflow flag. Fails with
   * STRATA_ERR_NUMERIC when the scale cannot decrease any further. */
  strata_status (*update)(void* self, int32_t overflow, strata_error* err);
  /* Element-wise conversion (round to nearest even; inf/nan preserved). Thread-safe. */
  strata_status (*cast)(void* self, const strata_buffer* src, const strata_buffer* dst,
                        strata_error* err);
} strata_precision_ops;

/* ------------------------------------------------------------------------------------------ */
/* Offload stratum: where optimizer state lives and where the optimizer step runs             */
/* ------------------------------------------------------------------------------------------ */

typedef struct strata_offload_caps {
  size_t struct_size;
  int32_t device_type;     /* where the step runs: STRATA_DEVICE_HOST or CUDA */
  const char* optimizer;   /* e.g. "adamw"; static storage */
#if STRATA_LEGACY_ABI_MINOR >= 2
  /* ABI 1.2: 1 if step writes every shard's `model` copy (when set) in the same pass as the
   * update, 0 if the runtime must cast after step. */
  int32_t writes_model_copy;
#endif
} strata_offload_caps;

typedef struct strata_step_args {
  size_t struct_size;
  uint64_t step;        /* 1-based count of applied optimizer steps, this one included */
  double grad_scale;    /* multiply every gradient by this first (unscale and clip fused) */
  double lr_factor;     /* multiplies the configured learning rate (schedulers); 1.0 = as set */
} strata_step_args;

typedef struct strata_offload_ops {
  size_t struct_size;
  strata_status (*create)(const char* config_json, const strata_host_api* host, void** self,
                          strata_error* err);
  void (*destroy)(void* self);
  strata_status (*query)(void* self, strata_offload_caps* caps, strata_error* err);
  /* Allocates optimizer state for exactly these shards (the same list every later step gets). */
  strata_status (*init_state)(void* self, const strata_shard* shards, size_t count,
                              strata_error* err);
  /* Updates shard masters in place from shard grads (and writes their model copies when the caps
   * say writes_model_copy). */
  strata_status (*step)(void* self, const strata_shard* shards, size_t count,
                        const strata_step_args* args, strata_error* err);
} strata_offload_ops;

/* ------------------------------------------------------------------------------------------ */
/* Entry point                                                                                */
/* ------------------------------------------------------------------------------------------ */

typedef const strata_plugin_descriptor* (*strata_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_LEGACY_PLUGIN_API_H */
