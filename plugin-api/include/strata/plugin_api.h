/*
 * strata/plugin_api.h — the one header a Strata plugin needs. C99, stable ABI.
 *
 * Rules (see docs/DESIGN.md, "ABI rules" and "Evolving the ABI"):
 *  - A plugin library exports exactly one symbol, strata_plugin_entry_v1, returning a const
 *    descriptor that lives as long as the library stays loaded.
 *  - ABI major must match STRATA_ABI_MAJOR exactly. Three minors, three meanings (the table is
 *    below): the descriptor's `min_runtime_minor` is the lowest runtime minor the plugin needs
 *    (its floor); an ops table's `header.built_minor` is the STRATA_ABI_MINOR of the header it was
 *    built with (which fields the table has); the host table's `runtime_minor` is the runtime's
 *    own (which services exist). The runtime loads a plugin whose floor is at or below its minor,
 *    and a plugin uses newer services where the runtime's minor says they exist.
 *  - Every ops table starts with a strata_ops_header (ABI 1.3; tables of 1.0-1.2 plugins have no
 *    header and are loaded through an adapter in the runtime). Every other struct crossing the
 *    boundary starts with `size_t struct_size`. Fields are only appended; a reader uses only the
 *    fields that lie inside the struct_size it was handed, and a writer fills only those.
 *  - Calls that may gain arguments take one args struct (PJRT style), so an argument is a field
 *    appended to the struct rather than a new function.
 *  - Functions marked "Required" must be non-NULL; the loader refuses a table without them,
 *    naming the function. Functions marked "Optional" may be NULL, and NULL means "not supported":
 *    the runtime then behaves as written beside the function.
 *  - Functions return a strata_status; on failure they write a readable sentence into the caller's
 *    strata_error (which may be NULL). No exception, C++ type or allocation ownership crosses.
 *    Whoever allocates frees.
 *  - Lifetimes and thread-safety are written beside each function.
 *  - One exception to "starts with struct_size and grows at the end": strata_shard travels in
 *    arrays (a larger stride would break every plugin of an earlier minor), so it never grows;
 *    what it would need is asked through the host table instead (device(), 1.7).
 *
 * Versions of this header (a field or function says "ABI 1.x" beside it where it came later
 * than 1.0):
 *   minor | what it added
 *   ------+----------------------------------------------------------------------------------
 *     0   | the four strata, the descriptor, host services (log, alloc_bytes, comm, precision)
 *     1   | parameter groups: define_group, gather/release, param_view
 *     2   | memory locations (alloc_bytes_at, account_bytes); the shard's model copy fields
 *     3   | ops tables start with strata_ops_header; args structs for create, the collectives,
 *         | grad_ready, gather/release and end_micro_step; the descriptor's minor is a floor
 *     4   | host service log_enabled
 *     5   | host services trace_enabled and trace_span (the job's timeline)
 *     6   | checkpoints and schedules: the offload stratum's state_slots, read_state and
 *         | write_state; save_state/load_state on precision and offload; the step's lr and
 *         | momentum, the configured ones in the caps
 *     7   | CUDA devices: host services device() and cuda_stream(), STRATA_MEM_DEVICE
 *     8   | the offload stratum's parameter store (offload_param: param_store_open/start/wait),
 *         | lent through the host table's offload/offload_self; the sharding shard_ranges
 *     9   | STRATA_GATHER_FOR_WRITE and deferred values (the sharding caps' features); a disk
 *         | parameter store may give a shared mapping of its bytes
 *    10   | the comm stratum's optional alltoallv and split (sub-groups of ranks), the comm
 *         | caps' features
 * Every field of every struct here says `since 1.x`: the minor of the header that first had it.
 * A plugin of minor 3 or later loads on any 1.x runtime whose minor is at least its floor.
 * A 1.0-1.2 plugin has no ops header and a descriptor whose minor is the header it was built
 * with; the runtime loads it through an adapter (runtime/src/legacy_abi) that gives it tables in
 * its own layout. Names of fields are not ABI, offsets and sizes are: the three minors above were
 * all called `abi_minor` in earlier copies of this header; renaming them changed no ABI.
 */
#ifndef STRATA_PLUGIN_API_H
#define STRATA_PLUGIN_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_ABI_MAJOR 1
/* This header's minor: the table above. */
#define STRATA_ABI_MINOR 10
/* The first minor with the 1.3 table layout: the lowest floor a plugin built with this header can
 * declare (a 1.0-1.2 runtime would read its tables in the old layout). */
#define STRATA_ABI_MINOR_TABLES 3

/* Name of the single exported entry symbol. A major bump introduces strata_plugin_entry_v2. */
#define STRATA_PLUGIN_ENTRY_SYMBOL "strata_plugin_entry_v1"

/* Convenience for readers: is `field` of struct `type` inside the size the writer gave? */
#define STRATA_STRUCT_HAS(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* The size of `type` up to and including `last_field`. Each versioned struct below is followed
 * by STRATA_<NAME>_SIZE_1_<m> macros (PJRT style): its size as minor m first released it, and
 * where it grew, as later minors did. A reader refuses a struct_size below the first; a writer
 * that targets an older minor sets that minor's size. */
#define STRATA_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

/* ------------------------------------------------------------------------------------------ */
/* Status and errors                                                                          */
/* ------------------------------------------------------------------------------------------ */

typedef enum strata_status {
  STRATA_OK = 0,
  STRATA_ERR_INVALID_ARGUMENT = 1, /* bad config value or call argument */
  STRATA_ERR_UNSUPPORTED = 2,      /* a capability this plugin does not have */
  STRATA_ERR_OUT_OF_MEMORY = 3,
  STRATA_ERR_COMM = 4,             /* a collective failed or peers disagree */
  STRATA_ERR_MISMATCH = 5,         /* ranks submitted different things; saved state is not the job's */
  STRATA_ERR_NUMERIC = 6,          /* e.g. loss scale cannot decrease any further */
  STRATA_ERR_INTERNAL = 7,
  STRATA_ERR_ABI = 8               /* version or struct-size mismatch */
} strata_status;

#define STRATA_ERROR_MESSAGE_MAX 1024

/* Caller-owned error record. The callee writes `code` and a NUL-terminated one-line `message`
 * (truncated to fit). Callers initialise struct_size = sizeof(strata_error). */
typedef struct strata_error {
  size_t struct_size; /* since 1.0 */
  int32_t code; /* a strata_status (since 1.0) */
  char message[STRATA_ERROR_MESSAGE_MAX]; /* since 1.0 */
} strata_error;
#define STRATA_ERROR_SIZE_1_0 STRATA_STRUCT_SIZE(strata_error, message)

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
  int32_t type;  /* strata_device_type (since 1.0) */
  int32_t index; /* CUDA ordinal; 0 for host (since 1.0) */
} strata_device;

/* A view of memory someone else owns. The descriptor itself is only read during the call. */
typedef struct strata_buffer {
  size_t struct_size; /* since 1.0 */
  void* data;     /* since 1.0 */
  uint64_t count; /* elements, not bytes (since 1.0) */
  int32_t dtype;  /* strata_dtype (since 1.0) */
  strata_device device; /* since 1.0 */
} strata_buffer;
#define STRATA_BUFFER_SIZE_1_0 STRATA_STRUCT_SIZE(strata_buffer, device)

/* ------------------------------------------------------------------------------------------ */
/* Plugin kinds and descriptor                                                                */
/* ------------------------------------------------------------------------------------------ */

typedef enum strata_plugin_kind {
  STRATA_PLUGIN_COMM = 1,
  STRATA_PLUGIN_SHARDING = 2,
  STRATA_PLUGIN_PRECISION = 3,
  STRATA_PLUGIN_OFFLOAD = 4
} strata_plugin_kind;

/* Returned by strata_plugin_entry_v1. Static storage; valid while the library is loaded. `ops`
 * points at the operation table of `kind` (strata_comm_ops, ...), which starts with a
 * strata_ops_header. The SDK's STRATA_PLUGIN macro (strata/plugin.hpp) writes both. */
typedef struct strata_plugin_descriptor {
  size_t struct_size;      /* since 1.0 */
  uint32_t abi_major;      /* STRATA_ABI_MAJOR (since 1.0) */
  uint32_t min_runtime_minor; /* the lowest runtime minor this plugin needs (its floor);
                                 >= STRATA_ABI_MINOR_TABLES. Before 1.3: the header's minor
                                 (since 1.0) */
  int32_t kind;            /* strata_plugin_kind (since 1.0) */
  const char* name;        /* e.g. "allreduce-mpi" (since 1.0) */
  const char* version;     /* the plugin's own version string (since 1.0) */
  const char* description; /* one line, for logs (since 1.0) */
  const void* ops;         /* since 1.0 */
} strata_plugin_descriptor;
#define STRATA_PLUGIN_DESCRIPTOR_SIZE_1_0 STRATA_STRUCT_SIZE(strata_plugin_descriptor, ops)

/* The first member of every ops table (ABI 1.3). Lets a reader that holds only the table know how
 * large it is and what it is before touching any function pointer. */
typedef struct strata_ops_header {
  size_t struct_size; /* sizeof the whole ops table as the plugin was built (since 1.3) */
  uint32_t abi_major; /* STRATA_ABI_MAJOR of the header the plugin was built with (since 1.3) */
  uint32_t built_minor; /* STRATA_ABI_MINOR of that header: the fields the table has (since 1.3) */
  int32_t kind;       /* strata_plugin_kind; equals the descriptor's (since 1.3) */
  uint32_t reserved;  /* 0 (since 1.3) */
} strata_ops_header;
#define STRATA_OPS_HEADER_SIZE_1_3 STRATA_STRUCT_SIZE(strata_ops_header, reserved)

/* For a table's initialiser: .header = STRATA_OPS_HEADER(strata_comm_ops, STRATA_PLUGIN_COMM). */
#define STRATA_OPS_HEADER(ops_type, plugin_kind) \
  { sizeof(ops_type), STRATA_ABI_MAJOR, STRATA_ABI_MINOR, (plugin_kind), 0u }

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

/* Where accounted bytes live (ABI 1.2). The memory report gives bytes per location and category;
 * its per-category totals count memory only (host, pinned and device), never disk. */
typedef enum strata_mem_location {
  STRATA_MEM_HOST = 0,        /* pageable host memory */
  STRATA_MEM_HOST_PINNED = 1, /* page-locked host memory (never swapped; DMA-able) */
  STRATA_MEM_DEVICE = 2,      /* accelerator memory */
  STRATA_MEM_DISK = 3,        /* bytes held in files, e.g. optimizer state offloaded to NVMe */
  STRATA_MEM_LOCATION_COUNT = 4
} strata_mem_location;

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
  STRATA_COLL_BARRIER = 5,
  STRATA_COLL_ALLTOALLV = 6 /* ABI 1.10 */
} strata_collective;

#define STRATA_COLL_BIT(c) (1u << (unsigned)(c))

/* An in-flight non-blocking collective. Owned by the comm plugin from the call that returns it
 * until the wait() that completes it; the buffers it names must stay valid until then. */
typedef struct strata_request_s* strata_request;

struct strata_host_api; /* defined below; passed to every create() */

/* create()'s arguments (ABI 1.3), the same for every kind. Read during the call only. */
typedef struct strata_plugin_create_args {
  size_t struct_size;                 /* since 1.3 */
  const char* config_json;            /* the stratum's "params" as a JSON object text (since 1.3) */
  const struct strata_host_api* host; /* the host-services table; lives until destroy (since 1.3) */
} strata_plugin_create_args;
#define STRATA_PLUGIN_CREATE_ARGS_SIZE_1_3 STRATA_STRUCT_SIZE(strata_plugin_create_args, host)

typedef struct strata_comm_caps {
  size_t struct_size;       /* since 1.0 */
  int32_t rank;             /* since 1.0 */
  int32_t size;             /* since 1.0 */
  int32_t local_rank; /* rank among the processes on this node (since 1.0) */
  int32_t local_size;       /* since 1.0 */
  uint32_t dtype_mask;      /* STRATA_DTYPE_BIT of each supported dtype (since 1.0) */
  /* STRATA_COLL_BIT of each supported collective. A bit whose function is NULL is ignored: the
   * runtime clears it before anyone reads the caps. */
  uint32_t collective_mask; /* since 1.0 */
  uint32_t device_mask;     /* STRATA_DEVICE_BIT of each device type whose memory it can move
                               (since 1.0) */
  int32_t nonblocking;      /* 1 if `req` may be non-NULL (then wait is required) (since 1.0) */
  /* STRATA_COMM_FEATURE_* bits. As collective_mask, a bit whose function is NULL is cleared by
   * the runtime (since 1.10) */
  uint32_t features;
} strata_comm_caps;
#define STRATA_COMM_CAPS_SIZE_1_0 STRATA_STRUCT_SIZE(strata_comm_caps, nonblocking)
#define STRATA_COMM_CAPS_SIZE_1_10 STRATA_STRUCT_SIZE(strata_comm_caps, features)

/* strata_comm_caps.features. SPLIT: split() makes instances for sub-groups of the ranks. */
#define STRATA_COMM_FEATURE_SPLIT (1u << 0)

/* The arguments of every collective (ABI 1.3). Each collective reads the fields named beside them
 * and ignores the others; the struct and the arrays it points to are read during the call only
 * (the buffers' memory must stay valid until the collective completes). */
typedef struct strata_coll_args {
  size_t struct_size;          /* since 1.3 */
  const strata_buffer* send;   /* allreduce, allgather(v), reduce_scatter (since 1.3) */
  const strata_buffer* recv;   /* allreduce, allgather(v), reduce_scatter; broadcast: in place
                                  (since 1.3) */
  int32_t op;                  /* strata_reduce_op: allreduce, reduce_scatter (since 1.3) */
  int32_t root;                /* broadcast (since 1.3) */
  const uint64_t* recv_counts; /* allgatherv: `size` entries, elements (since 1.3) */
  const uint64_t* displs;      /* allgatherv: `size` entries, elements (since 1.3); alltoallv:
                                  where rank r's block lands in recv (since 1.10) */
  const uint64_t* send_counts; /* alltoallv: `size` entries, elements (since 1.10) */
  const uint64_t* send_displs; /* alltoallv: `size` entries, elements (since 1.10) */
} strata_coll_args;
#define STRATA_COLL_ARGS_SIZE_1_3 STRATA_STRUCT_SIZE(strata_coll_args, displs)
#define STRATA_COLL_ARGS_SIZE_1_10 STRATA_STRUCT_SIZE(strata_coll_args, send_displs)

/* split()'s arguments (ABI 1.10). Read during the call only. */
typedef struct strata_comm_split_args {
  size_t struct_size; /* since 1.10 */
  int32_t color;      /* >= 0: the sub-group to join; STRATA_COMM_SPLIT_NONE: none (since 1.10) */
  int32_t key;        /* order within the sub-group (ties: the rank here) (since 1.10) */
} strata_comm_split_args;
#define STRATA_COMM_SPLIT_ARGS_SIZE_1_10 STRATA_STRUCT_SIZE(strata_comm_split_args, key)
#define STRATA_COMM_SPLIT_NONE (-1)

/*
 * Collectives. Common contract:
 *  - Every rank calls the same collectives in the same order with matching counts and dtypes.
 *  - `send` and `recv` may be the same buffer (in place) where it makes sense.
 *  - If `req` is NULL the call blocks until the result is in `recv`. Otherwise it starts the
 *    collective, stores a handle in *req and returns; the result is valid after wait(*req).
 *  - f16/bf16 reductions accumulate in f32.
 *  - Thread-safety: one thread at a time per instance. The runtime and the plugins it lends the
 *    instance to (host-services table) call it only from the thread that drives the runtime,
 *    inside their own ops; a plugin must not call it from threads of its own.
 */
typedef struct strata_comm_ops {
  strata_ops_header header; /* kind STRATA_PLUGIN_COMM
                               (since 1.3; replaces 1.0-1.2's struct_size) */

  /* Required. Creates an instance; on success *self is owned by the caller until destroy(self).
   * May initialise the process-wide transport (e.g. MPI_Init) if nobody did. Not thread-safe. */
  strata_status (*create)(const strata_plugin_create_args* args, void** self, strata_error* err);
                          /* since 1.0; args struct since 1.3 */
  /* Required. Releases everything; pending requests must have been waited. self may be NULL. */
  void (*destroy)(void* self); /* since 1.0 */
  /* Required. Fills *caps (caps->struct_size set by the caller). Cheap; any time after create. */
  strata_status (*query)(void* self, strata_comm_caps* caps, strata_error* err); /* since 1.0 */

  /* Required. recv.count == send.count. */
  strata_status (*allreduce)(void* self, const strata_coll_args* args, strata_request* req,
                             strata_error* err); /* since 1.0; args struct since 1.3 */
  /* Required. recv.count == send.count * size; rank r's block lands at offset r * send.count. */
  strata_status (*allgather)(void* self, const strata_coll_args* args, strata_request* req,
                             strata_error* err); /* since 1.0; args struct since 1.3 */
  /* Optional (NULL: not supported; ZeRO stages 1-3 refuse such a comm at start-up, naming it).
   * recv_counts[r] / displs[r] place rank r's block; send.count must equal recv_counts[rank]. */
  strata_status (*allgatherv)(void* self, const strata_coll_args* args, strata_request* req,
                              strata_error* err); /* since 1.0; args struct since 1.3 */
  /* Optional (NULL: not supported; as allgatherv). send.count == recv.count * size; rank r
   * receives the reduction of block r. */
  strata_status (*reduce_scatter)(void* self, const strata_coll_args* args, strata_request* req,
                                  strata_error* err); /* since 1.0; args struct since 1.3 */
  /* Required. In place on `recv`, from `root`. */
  strata_status (*broadcast)(void* self, const strata_coll_args* args, strata_request* req,
                             strata_error* err); /* since 1.0; args struct since 1.3 */
  /* Required. Reads no field of args beyond struct_size. */
  strata_status (*barrier)(void* self, const strata_coll_args* args, strata_request* req,
                           strata_error* err); /* since 1.0; args struct since 1.3 */

  /* Required when caps.nonblocking is 1, else may be NULL. Completes and frees a request. After it
   * returns (success or not) the handle is invalid. */
  strata_status (*wait)(void* self, strata_request req, strata_error* err); /* since 1.0 */
  /* Optional (NULL: callers that poll wait instead). *done = 1 if the request has completed (it
   * must still be waited to free it). */
  strata_status (*test)(void* self, strata_request req, int32_t* done, strata_error* err);
                        /* since 1.0 */

  /* Optional (NULL: not supported; caps.collective_mask then lacks STRATA_COLL_ALLTOALLV).
   * This rank sends send_counts[r] elements from offset send_displs[r] of `send` to rank r, and
   * receives recv_counts[r] elements from rank r at offset displs[r] of `recv` (elements of
   * send's dtype; every block must lie inside its buffer's count). recv_counts[r] must equal rank
   * r's send_counts[this rank]. Not in place. */
  strata_status (*alltoallv)(void* self, const strata_coll_args* args, strata_request* req,
                             strata_error* err); /* since 1.10 */
  /* Optional (NULL: no sub-groups; caps.features then lacks STRATA_COMM_FEATURE_SPLIT), as
   * MPI_Comm_split and ncclCommSplit: for tensor, pipeline or data parallel groups and process
   * sets. Collective and blocking over this instance's ranks: every rank calls it, in the same
   * order as its other collectives here, with no request of this instance pending. Ranks that pass
   * the same color (>= 0) get, in *child, a new instance holding just them, ranked by key (ties:
   * by their rank here); a rank that passes STRATA_COMM_SPLIT_NONE gets *child = NULL. The child
   * is used through this same table: its caps give its rank and size (local_rank/local_size among
   * its members on this host), its collectives involve its members only, it may be split again,
   * and destroy(child) frees it, before destroy(parent). Instances from one split share the
   * process's transport: the thread-safety rule above covers the parent and all its children
   * together (one thread at a time in all of them), and ranks that share several of these
   * instances must call their collectives in one order they all agree on (a plugin may run them
   * one after another, as blocking MPI collectives on several communicators would). */
  strata_status (*split)(void* self, const strata_comm_split_args* args, void** child,
                         strata_error* err); /* since 1.10 */
} strata_comm_ops;
#define STRATA_COMM_OPS_SIZE_1_3 STRATA_STRUCT_SIZE(strata_comm_ops, test)
#define STRATA_COMM_OPS_SIZE_1_10 STRATA_STRUCT_SIZE(strata_comm_ops, split)

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
  size_t struct_size; /* since 1.0 */
  const char* name; /* since 1.0 */
  int32_t dtype; /* model dtype of data and grad (since 1.0) */
  strata_device device; /* since 1.0 */
  uint64_t count; /* since 1.0 */
  void* data; /* since 1.0 */
  void* grad; /* since 1.0 */
} strata_param_desc;
#define STRATA_PARAM_DESC_SIZE_1_0 STRATA_STRUCT_SIZE(strata_param_desc, grad)

/* A contiguous range of one parameter that this rank owns for the optimizer step. `master` and
 * `grad` are fp32 and owned by the sharding plugin (at stage 0 with fp32 models they may alias the
 * host's own buffers). Valid from finish_reduce until the next call that changes sharding state. */
typedef struct strata_shard {
  size_t struct_size; /* since 1.0 */
  uint32_t param_index; /* since 1.0 */
  uint64_t offset; /* first element of the range within the parameter (since 1.0) */
  uint64_t count; /* since 1.0 */
  float* master; /* since 1.0 */
  float* grad; /* since 1.0 */
  /* ABI 1.2: where the updated master's model-dtype copy goes (`count` elements of
   * `model_dtype`, STRATA_F16 or STRATA_BF16), or NULL when no copy is wanted. The copy is made
   * between step and publish: by the offload plugin in its own pass if its caps say
   * writes_model_copy, else by the runtime (precision cast). See "Model-dtype copies" below. */
  void* model; /* since 1.2 */
  int32_t model_dtype; /* since 1.2 */
} strata_shard;
#define STRATA_SHARD_SIZE_1_0 STRATA_STRUCT_SIZE(strata_shard, grad)
#define STRATA_SHARD_SIZE_1_2 STRATA_STRUCT_SIZE(strata_shard, model_dtype)
/* Shards travel in arrays, so this struct never grows (a larger stride would break every plugin
 * of an earlier minor). Where master, grad and model live is the job's device (host service
 * device(), ABI 1.7): device pointers when it is STRATA_DEVICE_CUDA; an offload plugin that steps
 * on the host copies them itself. */

/* Where the host reads a parameter and writes its gradient right now (ABI 1.1). Filled by
 * param_view; the pointers stay valid until the next gather/release/step call on the runtime, or
 * for longer where the sharding stage says so (stages 0-1: until destroy). */
typedef struct strata_param_view {
  size_t struct_size; /* since 1.1 */
  void* data;     /* `count` elements of `dtype`; NULL if the parameter is not gathered (stage 3)
                     (since 1.1) */
  void* grad;     /* accumulate (+=) this micro-batch's gradient here; NULL if none is lent now
                     (since 1.1) */
  uint64_t count; /* since 1.1 */
  int32_t dtype;  /* since 1.1 */
} strata_param_view;
#define STRATA_PARAM_VIEW_SIZE_1_1 STRATA_STRUCT_SIZE(strata_param_view, dtype)

/* gather() flags. FOR_BACKWARD: the host will write gradients of the group's parameters; the
 * plugin lends zeroed gradient buffers where it owns gradient storage, and release() reduces them. */
#define STRATA_GATHER_FOR_BACKWARD 1u
/* ABI 1.9, where the sharding caps have STRATA_SHARDING_WRITABLE_GATHER. FOR_WRITE: the host will
 * write the group's whole values through param_view's data; release() makes them the parameters'
 * values (partitions and fp32 masters; optimizer state untouched). Every rank must write the same
 * values (the host broadcasts them first): each rank keeps its own slice of what it was given. */
#define STRATA_GATHER_FOR_WRITE 2u

/* ------------------------------------------------------------------------------------------ */
/* Host services: what the runtime lends every plugin at create time                           */
/* ------------------------------------------------------------------------------------------ */

struct strata_precision_ops;
struct strata_offload_ops;

/* One span of a plugin's work for the job's timeline (ABI 1.5; strata_host_api.trace_span). The
 * runtime writes it as a Chrome-trace "complete" event on the calling thread's track, with the
 * plugin's name as its category and the step in progress as an argument. */
typedef struct strata_trace_span {
  size_t struct_size; /* since 1.5 */
  /* What the work was ("bucket_reduce", "bucket_pack", "adam", ...). Must have static storage
   * duration (a string literal): the runtime keeps the pointer until the timeline is written. */
  const char* name; /* since 1.5 */
  int64_t begin_ns; /* CLOCK_MONOTONIC in ns (std::chrono::steady_clock on Linux) (since 1.5) */
  int64_t end_ns;   /* >= begin_ns; a span may cover work finished on another thread (since 1.5) */
  int64_t index;    /* what it worked on: a bucket, group or parameter index; -1 for none
                       (since 1.5) */
  uint64_t bytes;   /* bytes it moved or touched; 0 when that says nothing (since 1.5) */
  uint32_t flags;   /* STRATA_TRACE_* bits (since 1.5) */
} strata_trace_span;
#define STRATA_TRACE_SPAN_SIZE_1_5 STRATA_STRUCT_SIZE(strata_trace_span, flags)

/* The span is work in flight (a non-blocking collective from its start to its completion) that
 * may overlap the thread's other spans without nesting in them: it is drawn on a track of its
 * own (a Chrome-trace async event) rather than on the thread's. */
#define STRATA_TRACE_IN_FLIGHT 1u

/* One table per plugin instance, valid from create until destroy. Functions are thread-safe unless
 * noted. `comm`/`precision` are NULL for strata created before them (comm itself gets neither).
 * This is a host struct: it only grows at the end, and struct_size says which fields this runtime
 * fills. */
typedef struct strata_host_api {
  size_t struct_size; /* since 1.0 */
  uint32_t abi_major; /* since 1.0 */
  uint32_t runtime_minor; /* the runtime's minor: services of later minors are absent (since 1.0) */
  void* host_ctx;     /* first argument to every function below (since 1.0) */

  /* Writes one log line attributed to this plugin and rank. `message` read during the call. */
  void (*log)(void* host_ctx, int32_t level, const char* message); /* since 1.0 */
  /* Accounted allocation: counted under `category` in the memory report. Returns NULL on
   * failure. Host memory only in ABI 1.0. Free with free_bytes from the same table. */
  void* (*alloc_bytes)(void* host_ctx, size_t bytes, size_t alignment, int32_t category);
                       /* since 1.0 */
  void (*free_bytes)(void* host_ctx, void* ptr); /* since 1.0 */

  /* The comm stratum's instance, for collectives (same thread rules as strata_comm_ops). The
   * table is the runtime's, of the runtime's minor: a plugin built with a newer header checks
   * comm->header.struct_size before reading members appended after it (sdk::Comm does). (Plugins
   * built with a 1.0-1.2 header get a table in their own layout.) */
  const strata_comm_ops* comm; /* since 1.0 */
  void* comm_self; /* since 1.0 */

  /* The precision stratum's instance, for casts (sharding uses it to publish). */
  const struct strata_precision_ops* precision; /* since 1.0 */
  void* precision_self; /* since 1.0 */

  /* ---- ABI 1.2: memory locations. Check with STRATA_STRUCT_HAS before calling. ---- */
  /* Accounted allocation in `location`: STRATA_MEM_HOST (as alloc_bytes) or STRATA_MEM_HOST_PINNED
   * (page-locked with mlock). Returns NULL on failure, including when the system refuses to lock
   * the pages (RLIMIT_MEMLOCK); the caller may then fall back to STRATA_MEM_HOST. Free with
   * free_bytes, which unlocks. Thread-safe. */
  void* (*alloc_bytes_at)(void* host_ctx, size_t bytes, size_t alignment, int32_t category,
                          int32_t location); /* since 1.2 */
  /* Counts bytes the plugin holds outside the allocator, chiefly files (STRATA_MEM_DISK): adds
   * `delta` (negative to give back) to `category` at `location`. The plugin gives back what it
   * recorded before destroy returns. Thread-safe. */
  void (*account_bytes)(void* host_ctx, int32_t category, int32_t location, int64_t delta);
                        /* since 1.2 */

  /* ---- ABI 1.4. Check with STRATA_STRUCT_HAS before calling. ---- */
  /* 1 if a log line at `level` would be written, so a plugin can skip formatting it. Cheap (no
   * lock); thread-safe. */
  int32_t (*log_enabled)(void* host_ctx, int32_t level); /* since 1.4 */

  /* ---- ABI 1.5: the job's timeline. Check with STRATA_STRUCT_HAS before calling. ---- */
  /* 1 when the job records a timeline (STRATA_TIMELINE or the manifest's "timeline"), else 0.
   * Fixed for the runtime's lifetime: a plugin asks once, and when it is 0 reads no clocks and
   * calls trace_span never. Thread-safe. */
  int32_t (*trace_enabled)(void* host_ctx); /* since 1.5 */
  /* Records one span on the calling thread's track (ignored when the timeline is off). `span` is
   * read during the call; a span with struct_size below this header's, end before begin or a NULL
   * name is dropped. Cheap (an append to an in-memory buffer that another thread writes out), so
   * a plugin may call it a few times per bucket; thread-safe. */
  void (*trace_span)(void* host_ctx, const strata_trace_span* span); /* since 1.5 */

  /* ---- ABI 1.7: CUDA devices. Check with STRATA_STRUCT_HAS before calling. ----
   * alloc_bytes_at also takes STRATA_MEM_DEVICE from 1.7: cudaMalloc on the job's device (counted
   * at that location; free with free_bytes); NULL when the runtime was built without CUDA, the job
   * has no device, or the device is out of memory. */
  /* The job's device: where the host registered its parameters (every parameter is on the same
   * one), STRATA_DEVICE_HOST when they are in host memory. Known from finalize on (HOST before).
   * Cheap; thread-safe. */
  strata_device (*device)(void* host_ctx); /* since 1.7 */
  /* The cudaStream_t the host enqueues its forward and backward on (strata_set_stream; NULL: the
   * legacy default stream). Device work a plugin does inside a runtime call must be ordered after
   * the host's work already on this stream (enqueue on it, or wait on an event recorded on it),
   * and be ordered before the host's later work on it when the call returns (enqueue on it, or
   * make it wait on an event of yours). Valid for the call it was read in. Thread-safe. */
  void* (*cuda_stream)(void* host_ctx); /* since 1.7 */

  /* ---- ABI 1.8: the offload stratum, lent to the sharding stratum. Check with STRATA_STRUCT_HAS.
   * The offload stratum's table and instance in the sharding plugin's table (NULL in the other
   * strata's tables). The offload stratum is created after the sharding stratum, so the runtime
   * fills these two fields after both are created and before finalize: a sharding plugin reads
   * them from finalize on, never in create. The table is the plugin's own: check
   * offload->header.struct_size before reading a function appended after init_state (the param
   * store's, chiefly). Calls follow the offload plugin's rules (the thread that drives the
   * runtime, inside the sharding plugin's own ops). */
  const struct strata_offload_ops* offload; /* since 1.8 */
  void* offload_self; /* since 1.8 */
} strata_host_api;
#define STRATA_HOST_API_SIZE_1_0 STRATA_STRUCT_SIZE(strata_host_api, precision_self)
#define STRATA_HOST_API_SIZE_1_2 STRATA_STRUCT_SIZE(strata_host_api, account_bytes)
#define STRATA_HOST_API_SIZE_1_4 STRATA_STRUCT_SIZE(strata_host_api, log_enabled)
#define STRATA_HOST_API_SIZE_1_5 STRATA_STRUCT_SIZE(strata_host_api, trace_span)
#define STRATA_HOST_API_SIZE_1_7 STRATA_STRUCT_SIZE(strata_host_api, cuda_stream)
#define STRATA_HOST_API_SIZE_1_8 STRATA_STRUCT_SIZE(strata_host_api, offload_self)

/* ------------------------------------------------------------------------------------------ */
/* Sharding stratum: who holds which part of params, grads and optimizer state                */
/* ------------------------------------------------------------------------------------------ */

typedef struct strata_sharding_caps {
  size_t struct_size; /* since 1.0 */
  int32_t stage; /* ZeRO stage 0..3 (since 1.0) */
  /* 1 if every rank's owned shards cover the whole model identically (stage 0): reductions of
   * per-shard statistics across ranks are then unnecessary. 0 if shards partition the model. */
  int32_t shards_replicated; /* since 1.0 */
  /* ABI 1.9: STRATA_SHARDING_* bits (0 from an older plugin: none). */
  uint32_t features; /* since 1.9 */
} strata_sharding_caps;
#define STRATA_SHARDING_CAPS_SIZE_1_0 STRATA_STRUCT_SIZE(strata_sharding_caps, shards_replicated)
#define STRATA_SHARDING_CAPS_SIZE_1_9 STRATA_STRUCT_SIZE(strata_sharding_caps, features)

/* strata_sharding_caps.features. WRITABLE_GATHER: gather() takes STRATA_GATHER_FOR_WRITE.
 * DEFERRED_VALUES: register_param takes NULL `data` (the runtime passes it only for parameters
 * in a group); the values are zero until the host writes them through a gather FOR_WRITE, and a
 * parameter the stage keeps whole gets a zeroed buffer of the plugin's, which param_view gives as
 * its data until destroy. A host then never holds the whole model at once (DeepSpeed's
 * zero.Init). */
#define STRATA_SHARDING_WRITABLE_GATHER 1u
#define STRATA_SHARDING_DEFERRED_VALUES 2u

/* grad_ready()'s arguments (ABI 1.3). */
typedef struct strata_grad_ready_args {
  size_t struct_size; /* since 1.3 */
  uint32_t param_index; /* since 1.3 */
  int32_t boundary; /* 1 on the last micro-batch before an optimizer step (since 1.3) */
} strata_grad_ready_args;
#define STRATA_GRAD_READY_ARGS_SIZE_1_3 STRATA_STRUCT_SIZE(strata_grad_ready_args, boundary)

/* gather() and release() arguments (ABI 1.3). */
typedef struct strata_group_args {
  size_t struct_size; /* since 1.3 */
  uint32_t group; /* since 1.3 */
  uint32_t flags; /* gather: STRATA_GATHER_* bits; release: 0 (since 1.3) */
} strata_group_args;
#define STRATA_GROUP_ARGS_SIZE_1_3 STRATA_STRUCT_SIZE(strata_group_args, flags)

/* end_micro_step()'s arguments (ABI 1.3). */
typedef struct strata_micro_step_args {
  size_t struct_size; /* since 1.3 */
  int32_t boundary; /* 1 at an accumulation boundary (finish_reduce follows) (since 1.3) */
} strata_micro_step_args;
#define STRATA_MICRO_STEP_ARGS_SIZE_1_3 STRATA_STRUCT_SIZE(strata_micro_step_args, boundary)

/* Call order: create → register_param* → define_group* → finalize → { (gather | grad_ready |
 * release)* → end_micro_step → [finish_reduce → owned_shards → publish → zero_grad] }* → destroy.
 * One thread at a time per instance: the runtime calls it only from the thread that drives the
 * runtime (the host's training loop), never concurrently.
 *
 * Model-dtype copies (f16/bf16 copies of the fp32 masters), one rule: a shard's `model` pointer is
 * the sharding plugin's request for such a copy; the sharding plugin never rounds masters into
 * model copies itself. The offload plugin writes them during step when its caps say
 * writes_model_copy; otherwise the runtime casts them (precision cast) after step, before publish. */
typedef struct strata_sharding_ops {
  strata_ops_header header; /* kind STRATA_PLUGIN_SHARDING
                               (since 1.3; replaces 1.0-1.2's struct_size) */
  /* Required. As strata_comm_ops.create. */
  strata_status (*create)(const strata_plugin_create_args* args, void** self, strata_error* err);
                          /* since 1.0; args struct since 1.3 */
  /* Required. self may be NULL. */
  void (*destroy)(void* self); /* since 1.0 */
  /* Required. */
  strata_status (*query)(void* self, strata_sharding_caps* caps, strata_error* err); /* since 1.0 */

  /* Required. Indices are dense, 0.., in registration order (the same on every rank). */
  strata_status (*register_param)(void* self, uint32_t index, const strata_param_desc* param,
                                  strata_error* err); /* since 1.0 */
  /* Required. All parameters registered and broadcast; allocate masters, buckets, partitions.
   * Collective. */
  strata_status (*finalize)(void* self, strata_error* err); /* since 1.0 */
  /* Required. The host finished writing (accumulating into) the parameter's gradient for this
   * micro-batch. May start collectives. */
  strata_status (*grad_ready)(void* self, const strata_grad_ready_args* args, strata_error* err);
                              /* since 1.0; args struct since 1.3 */
  /* Required. At the boundary: complete every reduction (including params never marked ready),
   * averaged over ranks. Afterwards owned shards hold the reduced fp32 gradient. Collective. */
  strata_status (*finish_reduce)(void* self, strata_error* err); /* since 1.0 */
  /* Required. The ranges this rank steps. *shards stays owned by the plugin, valid until the next
   * call on this instance other than owned_shards. */
  strata_status (*owned_shards)(void* self, const strata_shard** shards, size_t* count,
                                strata_error* err); /* since 1.0 */
  /* Required. After the optimizer updated the masters (and the model copies were made, see the
   * rule above): make model parameters current wherever the stage needs them (e.g. allgather).
   * Collective. */
  strata_status (*publish)(void* self, strata_error* err); /* since 1.0 */
  /* Required. Zero the host's gradient buffers and any gradient shards for the next micro-batch. */
  strata_status (*zero_grad)(void* self, strata_error* err); /* since 1.0 */

  /* ---- ABI 1.1: parameter groups (a layer), chiefly for stage 3. Optional, all five or none
   * (NULL: the plugin has no groups; the runtime then uses the host's registered buffers, treats
   * gather and release as no-ops, refuses parameters registered without a grad buffer, and calls
   * nothing at the end of a micro-step). ---- */

  /* Before finalize. Group ids are dense, 0.., in definition order (the same on every rank). A
   * parameter belongs to at most one group; `params` and `name` are read during the call only. */
  strata_status (*define_group)(void* self, uint32_t group, const char* name,
                                const uint32_t* params, size_t count, strata_error* err);
                                /* since 1.1 */
  /* Makes the group's parameters readable (stage 3: allgather, possibly prefetched) and, with
   * STRATA_GATHER_FOR_BACKWARD, lends gradient buffers. Collective where the stage moves
   * parameters or gradients on gather/release (stages 2-3 in plugins/zero): every rank gathers
   * and releases the same groups in the same order; a divergence is an error naming the ranks
   * and groups, never a hang. */
  strata_status (*gather)(void* self, const strata_group_args* args, strata_error* err);
                          /* since 1.1; args struct since 1.3 */
  /* Ends the host's use of the group: lent gradients are reduced towards their owners' shards and
   * their buffers reclaimed; stage 3 frees the gathered parameters. Same collectiveness as
   * gather. */
  strata_status (*release)(void* self, const strata_group_args* args, strata_error* err);
                           /* since 1.1; args struct since 1.3 */
  /* Current buffers of parameter `index` (see strata_param_view). Local. After finalize it fails
   * only for a bad index; what is not available now is reported as NULL. */
  strata_status (*param_view)(void* self, uint32_t index, strata_param_view* view,
                              strata_error* err); /* since 1.1 */
  /* After every micro-batch, before finish_reduce at a boundary. Stages that reduce every
   * micro-batch (2, 3) complete that micro-batch's reductions here. Collective. */
  strata_status (*end_micro_step)(void* self, const strata_micro_step_args* args,
                                  strata_error* err); /* since 1.1; args struct since 1.3 */

  /* ---- ABI 1.8. Optional (NULL: the runtime hands init_state the owned_shards). ----
   * After finalize: the ranges owned_shards returns, with master, grad and model NULL: all the
   * offload stratum's init_state needs to size its state. A plugin that keeps its masters out of
   * memory between steps (ZeRO-Infinity's offload_param) gives these, so that finalize, where the
   * host still holds its whole model, brings nothing in. The runtime uses them only with an
   * offload plugin whose table is of 1.8 or later (see init_state). *shards as for owned_shards. */
  strata_status (*shard_ranges)(void* self, const strata_shard** shards, size_t* count,
                                strata_error* err); /* since 1.8 */
} strata_sharding_ops;
#define STRATA_SHARDING_OPS_SIZE_1_3 STRATA_STRUCT_SIZE(strata_sharding_ops, end_micro_step)

/* ------------------------------------------------------------------------------------------ */
/* Precision stratum: model number format and loss scaling                                    */
/* ------------------------------------------------------------------------------------------ */

typedef struct strata_precision_caps {
  size_t struct_size;      /* since 1.0 */
  int32_t model_dtype;     /* dtype the host must register parameters in (since 1.0) */
  int32_t dynamic_scaling; /* 1 if the scale changes with overflows (since 1.0) */
} strata_precision_caps;
#define STRATA_PRECISION_CAPS_SIZE_1_0 STRATA_STRUCT_SIZE(strata_precision_caps, dynamic_scaling)

typedef struct strata_grad_stats {
  size_t struct_size; /* since 1.0 */
  int32_t nonfinite; /* 1 if any inspected gradient element is inf or nan (since 1.0) */
  double sum_sq;     /* sum of squares of the inspected (still scaled) gradients, in fp64
                        (since 1.0) */
} strata_grad_stats;
#define STRATA_GRAD_STATS_SIZE_1_0 STRATA_STRUCT_SIZE(strata_grad_stats, sum_sq)

typedef struct strata_precision_ops {
  strata_ops_header header; /* kind STRATA_PLUGIN_PRECISION
                               (since 1.3; replaces 1.0-1.2's struct_size) */
  /* Required. As strata_comm_ops.create. */
  strata_status (*create)(const strata_plugin_create_args* args, void** self, strata_error* err);
                          /* since 1.0; args struct since 1.3 */
  /* Required. self may be NULL. */
  void (*destroy)(void* self); /* since 1.0 */
  /* Required. */
  strata_status (*query)(void* self, strata_precision_caps* caps, strata_error* err);
                         /* since 1.0 */

  /* Required. Current loss scale the host multiplies its loss by (1.0 when not scaling). */
  strata_status (*loss_scale)(void* self, double* scale, strata_error* err); /* since 1.0 */
  /* Required. One pass over the owned fp32 gradients: non-finite flag and fp64 sum of squares.
   * Read-only. The runtime sums the ranks' sums and ORs their flags. */
  strata_status (*grad_stats)(void* self, const strata_shard* shards, size_t count,
                              strata_grad_stats* stats, strata_error* err); /* since 1.0 */
  /* Required. Once per optimizer step, skipped or not, with the agreed overflow flag. Fails with
   * STRATA_ERR_NUMERIC when the scale cannot decrease any further. */
  strata_status (*update)(void* self, int32_t overflow, strata_error* err); /* since 1.0 */
  /* Required. Element-wise conversion (round to nearest even; inf/nan preserved). Thread-safe. */
  strata_status (*cast)(void* self, const strata_buffer* src, const strata_buffer* dst,
                        strata_error* err); /* since 1.0 */

  /* ---- ABI 1.6: checkpoints. Optional (NULL: nothing to save; a loss scaler starts afresh on
   * load). See strata_save_state_fn (declared with the offload stratum below). ---- */
  strata_status (*save_state)(void* self, char* buffer, size_t capacity, size_t* length,
                              strata_error* err); /* since 1.6 */
  strata_status (*load_state)(void* self, const char* json, strata_error* err); /* since 1.6 */
} strata_precision_ops;
#define STRATA_PRECISION_OPS_SIZE_1_3 STRATA_STRUCT_SIZE(strata_precision_ops, cast)

/* ------------------------------------------------------------------------------------------ */
/* Offload stratum: where optimizer state lives and where the optimizer step runs             */
/* ------------------------------------------------------------------------------------------ */

typedef struct strata_offload_caps {
  size_t struct_size;      /* since 1.0 */
  int32_t device_type;     /* where the step runs: STRATA_DEVICE_HOST or CUDA (since 1.0) */
  const char* optimizer;   /* e.g. "adamw"; static storage (since 1.0) */
  /* ABI 1.2: 1 if step writes every shard's `model` copy (when set) in the same pass as the
   * update, 0 if the runtime must cast after step. */
  int32_t writes_model_copy; /* since 1.2 */
  /* ABI 1.6: the optimizer's configured learning rate and momentum (Adam's and Lion's beta1, SGD's
   * momentum), which a schedule starts from; NaN when the optimizer has none (SGD without
   * momentum). */
  double lr;               /* since 1.6 */
  double momentum;         /* since 1.6 */
} strata_offload_caps;
#define STRATA_OFFLOAD_CAPS_SIZE_1_0 STRATA_STRUCT_SIZE(strata_offload_caps, optimizer)
#define STRATA_OFFLOAD_CAPS_SIZE_1_2 STRATA_STRUCT_SIZE(strata_offload_caps, writes_model_copy)
#define STRATA_OFFLOAD_CAPS_SIZE_1_6 STRATA_STRUCT_SIZE(strata_offload_caps, momentum)

typedef struct strata_step_args {
  size_t struct_size;   /* since 1.0 */
  uint64_t step;        /* 1-based count of applied optimizer steps, this one included
                           (since 1.0) */
  double grad_scale;    /* multiply every gradient by this first (unscale and clip fused)
                           (since 1.0) */
  double lr_factor;     /* multiplies the learning rate below; 1.0 = as set (since 1.0) */
  /* ABI 1.6: the learning rate of this step (a schedule's value or the host's override); NaN:
   * the configured one. The step uses lr × lr_factor. */
  double lr;            /* since 1.6 */
  /* ABI 1.6: the momentum of this step (Adam's and Lion's beta1, SGD's momentum; OneCycle cycles
   * it), also in Adam's bias correction 1 - beta1^step; NaN: the configured one. */
  double momentum;      /* since 1.6 */
  /* ABI 1.6: Adam's and Lion's beta2 for this step (DeepSpeed's OneCycle sets it to 0.99 while it
   * cycles momentum); NaN: the configured one. Optimizers without a beta2 ignore it. */
  double beta2;         /* since 1.6 */
} strata_step_args;
#define STRATA_STEP_ARGS_SIZE_1_0 STRATA_STRUCT_SIZE(strata_step_args, lr_factor)
#define STRATA_STEP_ARGS_SIZE_1_6 STRATA_STRUCT_SIZE(strata_step_args, beta2)

/* Checkpoints (ABI 1.6). Per-element optimizer state is a set of fp32 arrays, "slots", each as long
 * as the shard it belongs to (Adam: exp_avg and exp_avg_sq; SGD with momentum: momentum_buffer).
 * The runtime saves and loads them through read_state/write_state, range by range, so that a
 * checkpoint can be loaded at another partition layout: slot names must match at load. */
typedef struct strata_state_slots {
  size_t struct_size;       /* since 1.6 */
  uint32_t count;           /* slots per element; 0 for a stateless optimizer (plain SGD)
                               (since 1.6) */
  const char* const* names; /* `count` names, static storage, unique (e.g. "exp_avg") (since 1.6) */
} strata_state_slots;
#define STRATA_STATE_SLOTS_SIZE_1_6 STRATA_STRUCT_SIZE(strata_state_slots, names)

/* read_state()/write_state() arguments: `count` elements of slot `slot` of shard `shard` (an
 * index into the list init_state got), from element `first` of that shard. Read during the call. */
typedef struct strata_state_io_args {
  size_t struct_size; /* since 1.6 */
  uint32_t shard; /* since 1.6 */
  uint32_t slot; /* since 1.6 */
  uint64_t first; /* since 1.6 */
  uint64_t count; /* since 1.6 */
  float* data; /* read_state writes `count` floats here; write_state reads them from here
                  (since 1.6) */
} strata_state_io_args;
#define STRATA_STATE_IO_ARGS_SIZE_1_6 STRATA_STRUCT_SIZE(strata_state_io_args, data)

/* A plugin's state that is not per element (a loss scaler's scale and counters), as the text of a
 * JSON object, saved in the checkpoint's metadata. save_state writes at most `capacity` bytes,
 * NUL included, into `buffer` and sets *length to the text's length without the NUL; when it does
 * not fit it writes nothing, returns STRATA_OK with *length set, and the runtime calls again with a
 * larger buffer (buffer NULL with capacity 0 is such a size query).
 * load_state gets a text save_state of the same plugin name wrote (any version: it refuses, with a
 * message, what it cannot read). Both are called only from the thread that drives the runtime,
 * between steps. */
typedef strata_status (*strata_save_state_fn)(void* self, char* buffer, size_t capacity,
                                              size_t* length, strata_error* err);
typedef strata_status (*strata_load_state_fn)(void* self, const char* json, strata_error* err);

/* ABI 1.8: the parameter store (ZeRO-Infinity's offload_param). The sharding stratum keeps the
 * parameters it partitions (ZeRO stage 3's parameter partition) in a store that the offload stratum
 * places where its config says: host memory (offload_param.device cpu, page-locked with
 * pin_memory) or a file on a drive (nvme, under offload_param.nvme_path). */
typedef struct strata_param_store_args {
  size_t struct_size; /* since 1.8 */
  uint64_t bytes; /* in: the store's size (since 1.8) */
  /* out: STRATA_MEM_HOST, STRATA_MEM_HOST_PINNED or STRATA_MEM_DISK; -1 when the config asks for
   * no parameter offload (offload_param.device none): the sharding plugin keeps its parameters
   * itself, and nothing was allocated. */
  int32_t location; /* since 1.8 */
  /* out: for the memory locations, the `bytes` bytes themselves (zeroed, at least 64-byte aligned,
   * valid until the offload instance is destroyed): read and write them in place, no transfers
   * needed. For STRATA_MEM_DISK, reached through param_store_start: NULL, or (ABI 1.9) a shared
   * mapping of the file (valid until the instance is destroyed), through which the sharding
   * plugin may also read and write the bytes in place; the kernel pages them between the drive
   * and its page cache, which it can reclaim, and transfers through param_store_start see the
   * same bytes. */
  void* data; /* since 1.8 */
  /* out: how many parameter elements the sharding plugin should keep reading ahead of use
   * (DeepSpeed's offload_param.buffer_count × buffer_size); 0: no bound of the store's. */
  uint64_t read_ahead_elements; /* since 1.8 */
} strata_param_store_args;
#define STRATA_PARAM_STORE_ARGS_SIZE_1_8 \
  STRATA_STRUCT_SIZE(strata_param_store_args, read_ahead_elements)

/* One transfer between host memory and the store (param_store_start). */
typedef struct strata_param_io_args {
  size_t struct_size; /* since 1.8 */
  int32_t write;   /* 1: `bytes` from `data` into the store at `offset`; 0: the reverse
                      (since 1.8) */
  uint64_t offset; /* bytes from the store's start; offset + bytes <= the store's size
                      (since 1.8) */
  uint64_t bytes;  /* since 1.8 */
  void* data;      /* host memory; must stay valid, and untouched, until the transfer is waited
                      (since 1.8) */
} strata_param_io_args;
#define STRATA_PARAM_IO_ARGS_SIZE_1_8 STRATA_STRUCT_SIZE(strata_param_io_args, data)

typedef struct strata_offload_ops {
  strata_ops_header header; /* kind STRATA_PLUGIN_OFFLOAD
                               (since 1.3; replaces 1.0-1.2's struct_size) */
  /* Required. As strata_comm_ops.create. */
  strata_status (*create)(const strata_plugin_create_args* args, void** self, strata_error* err);
                          /* since 1.0; args struct since 1.3 */
  /* Required. self may be NULL. */
  void (*destroy)(void* self); /* since 1.0 */
  /* Required. */
  strata_status (*query)(void* self, strata_offload_caps* caps, strata_error* err); /* since 1.0 */
  /* Required. Allocates optimizer state for exactly these shards (the same list every later step
   * gets). A plugin whose table is of ABI 1.8 or later reads only each shard's struct_size,
   * param_index, offset and count here: master, grad and model may be NULL (the runtime passes
   * the sharding plugin's shard_ranges when it has them). */
  strata_status (*init_state)(void* self, const strata_shard* shards, size_t count,
                              strata_error* err); /* since 1.0 */
  /* Required. Updates shard masters in place from shard grads (and writes their model copies when
   * the caps say writes_model_copy). */
  strata_status (*step)(void* self, const strata_shard* shards, size_t count,
                        const strata_step_args* args, strata_error* err); /* since 1.0 */

  /* ---- ABI 1.6: checkpoints. Optional; state_slots, read_state and write_state are all three
   * set or all NULL (NULL: the runtime refuses to save or load this optimizer's state, naming the
   * plugin). Called after init_state, between steps, from the thread that drives the runtime. ---- */
  /* The slots this optimizer keeps per element (the same for every shard). Cheap. */
  strata_status (*state_slots)(void* self, strata_state_slots* slots, strata_error* err);
                               /* since 1.6 */
  /* Copies a range of one slot out (the state may be in memory or in files: NVMe offload). */
  strata_status (*read_state)(void* self, const strata_state_io_args* args, strata_error* err);
                              /* since 1.6 */
  /* Overwrites a range of one slot. The runtime loads a checkpoint after init_state and before the
   * first resumed step, whose args.step is the saved count of applied steps + 1. */
  strata_status (*write_state)(void* self, const strata_state_io_args* args, strata_error* err);
                               /* since 1.6 */
  /* Optional (NULL: no such state). See strata_save_state_fn. */
  strata_save_state_fn save_state; /* since 1.6 */
  strata_load_state_fn load_state; /* since 1.6 */

  /* ---- ABI 1.8: the parameter store (see strata_param_store_args). Optional, all three or none
   * (NULL: no store; a sharding plugin keeps its parameters in memory, and this plugin refuses at
   * create a config that asks to offload them). Called by the sharding plugin through its host
   * table's `offload`, from its finalize on, on the thread that drives the runtime. ---- */
  /* Once per instance: allocates the store (memory) or creates and sizes its file (disk, unlinked
   * at once so the drive is freed however the process ends). A directory that is missing,
   * read-only or too small fails here with the path and the bytes needed. */
  strata_status (*param_store_open)(void* self, strata_param_store_args* args, strata_error* err);
                                    /* since 1.8 */
  /* Starts a transfer (disk: asynchronous; memory: done on return) and sets *ticket, which
   * param_store_wait takes exactly once. Any number may be in flight; transfers to overlapping
   * bytes complete in an unspecified order, so the caller waits for a write before it reads the
   * same bytes back. */
  strata_status (*param_store_start)(void* self, const strata_param_io_args* args,
                                     uint64_t* ticket, strata_error* err); /* since 1.8 */
  /* Blocks until the ticket's transfer is complete; fails (naming the file, offset and bytes) for a
   * failed or short one. The ticket is spent either way. */
  strata_status (*param_store_wait)(void* self, uint64_t ticket, strata_error* err); /* since 1.8 */
} strata_offload_ops;
#define STRATA_OFFLOAD_OPS_SIZE_1_3 STRATA_STRUCT_SIZE(strata_offload_ops, step)
#define STRATA_OFFLOAD_OPS_SIZE_1_8 STRATA_STRUCT_SIZE(strata_offload_ops, param_store_wait)

/* ------------------------------------------------------------------------------------------ */
/* Entry point                                                                                */
/* ------------------------------------------------------------------------------------------ */

typedef const strata_plugin_descriptor* (*strata_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_PLUGIN_API_H */
