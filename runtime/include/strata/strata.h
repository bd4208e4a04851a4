/*
 * strata/strata.h — the C API a training host uses to embed the Strata runtime (libstrata).
 * Stable like the plugin ABI: versioned structs start with struct_size, fields only appended. A
 * host sets struct_size = sizeof(the struct) as its header has it; the runtime accepts any size from
 * the struct's first released size up (an older host's smaller struct, a newer host's larger one)
 * and reads and writes only the fields inside it. Below the first released size a call fails with
 * STRATA_ERR_ABI naming the struct and both sizes (calls without a strata_error log it).
 * Every field of every struct here says `since 1.x`: the API minor (table below) that first had it.
 *
 * Threading: a strata_runtime is used by one thread at a time (the training loop's). Distinct
 * runtimes in one process are not supported (the comm transport is process-wide).
 * Errors: every call that can fail returns a strata_status and, when `err` is non-NULL, writes a
 * one-line message naming the file, JSON path, parameter or rank concerned.
 */
#ifndef STRATA_STRATA_H
#define STRATA_STRATA_H

#include <strata/plugin_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STRATA_API_VERSION_MAJOR 1
/* Versions of the host API (a function or field says "API 1.x" beside it where it came later
 * than 1.0). Counted apart from the plugin ABI's minor (plugin_api.h), though they moved together
 * until 1.9:
 *   minor | what it added
 *   ------+----------------------------------------------------------------------------------
 *     1   | parameter groups, gather/release, views
 *     2   | memory locations
 *     3   | every versioned struct accepted at any struct_size from its first released size up
 *         | (1.2 and earlier refused one smaller than the runtime's own)
 *     4   | nothing new here (the plugin ABI's 1.4 added a host service for plugins)
 *     5   | strata_step_result says where the step's time went; the timeline (STRATA_TIMELINE)
 *     6   | checkpoints (strata_save, strata_save_wait, strata_load); the learning rate
 *         | (strata_lr, strata_set_lr; the manifest's "scheduler")
 *     7   | CUDA device parameters and strata_set_stream
 *     8   | strata_version()
 *     9   | deferred values: strata_register_param with NULL data where the sharding stage
 *         | partitions the parameter; strata_gather with STRATA_GATHER_FOR_WRITE
 *    10   | strata_api_version(): a host asks the loaded library which API it implements
 *    11   | the manifest's checkpoint block: strata_set_host_state, strata_resumed
 *    12   | uneven data: strata_join (the manifest's "join")
 *    13   | sub-groups of ranks for the host's collectives (strata_group_*), alltoallv
 */
#define STRATA_API_VERSION_MINOR 13
/* strata_api_version()'s value for MAJOR.MINOR. */
#define STRATA_API_VERSION_OF(major, minor) (((uint32_t)(major) << 16) | (uint32_t)(minor))

#if defined(_WIN32)
#define STRATA_API
#else
#define STRATA_API __attribute__((visibility("default")))
#endif

typedef struct strata_runtime strata_runtime; /* opaque */

typedef struct strata_create_options {
  size_t struct_size; /* since 1.0 */
  /* Exactly one of manifest_path / manifest_json. */
  const char* manifest_path; /* since 1.0 */
  const char* manifest_json; /* since 1.0 */
  /* With manifest_json: the folder plugin names are first looked up in (NULL: current dir). */
  const char* base_dir; /* since 1.0 */
  /* Optional JSON object merged over the manifest (RFC 7386 merge patch), e.g. a batch size
   * given on the host's command line. NULL for none. */
  const char* overrides_json; /* since 1.0 */
} strata_create_options;
/* First released sizes: STRATA_STRUCT_SIZE in plugin_api.h. */
#define STRATA_CREATE_OPTIONS_SIZE_1_0 STRATA_STRUCT_SIZE(strata_create_options, overrides_json)

/* Reads and validates the manifest, loads the four strata, creates the comm transport.
 * Collective over all ranks. On success *out is owned by the caller until strata_destroy. */
STRATA_API strata_status strata_create(const strata_create_options* options, strata_runtime** out,
                                       strata_error* err);
/* Destroys plugins in reverse order. NULL is a no-op. Collective. Plugin libraries stay mapped
 * until the process exits (transports keep threads in them); the comm transport, once shut down,
 * cannot be started again in the same process, so create one runtime per process. */
STRATA_API void strata_destroy(strata_runtime* rt);

typedef struct strata_world_info {
  size_t struct_size; /* since 1.0 */
  int32_t rank; /* since 1.0 */
  int32_t size; /* since 1.0 */
  int32_t local_rank; /* since 1.0 */
  int32_t local_size; /* since 1.0 */
} strata_world_info;
#define STRATA_WORLD_INFO_SIZE_1_0 STRATA_STRUCT_SIZE(strata_world_info, local_size)

typedef struct strata_training_info {
  size_t struct_size;                      /* since 1.0 */
  uint64_t train_batch_size;               /* global batch per optimizer step (since 1.0) */
  uint64_t micro_batch_size;               /* per rank, per micro-step (since 1.0) */
  uint64_t gradient_accumulation_steps;    /* since 1.0 */
  double gradient_clipping;                /* 0 = off (since 1.0) */
  int32_t model_dtype;                     /* dtype parameters must be registered in (since 1.0) */
} strata_training_info;
#define STRATA_TRAINING_INFO_SIZE_1_0 STRATA_STRUCT_SIZE(strata_training_info, model_dtype)

/* Any time after create. Cheap, no communication. */
STRATA_API strata_status strata_world(const strata_runtime* rt, strata_world_info* out);
STRATA_API strata_status strata_training(const strata_runtime* rt, strata_training_info* out);

/* Registers one parameter; returns its dense index in *index (may be NULL). Before finalize.
 * `data` holds the initial values (rank 0's are broadcast at finalize). `grad` may be NULL (API
 * 1.1): the runtime then owns gradient storage and the host reaches it through strata_view_param.
 * Non-NULL buffers stay host-owned and must outlive the runtime; at ZeRO stage 3 the runtime stops
 * using `data` of parameters it partitions after finalize (strata_view_param says which).
 * API 1.9: `data` may be NULL (deferred values) for a parameter in a group where the sharding
 * plugin says it can (STRATA_SHARDING_DEFERRED_VALUES: plugins/zero at stage 3; finalize names the
 * parameter otherwise). Its values are zero until the host writes them with
 * strata_gather(STRATA_GATHER_FOR_WRITE); one the stage keeps whole (the persistence threshold)
 * lives in a buffer of the runtime's, which strata_view_param gives. A host builds and writes one
 * group at a time and never holds the whole model (DeepSpeed's zero.Init). */
STRATA_API strata_status strata_register_param(strata_runtime* rt, const strata_param_desc* param,
                                               uint32_t* index, strata_error* err);
/* Collective: checks that every rank registered the same parameters (names, counts, dtypes,
 * order; the first difference and the ranks are named), broadcasts rank 0's values, sets up the
 * strata, zeroes every gradient buffer (write gradients after finalize), and logs the memory
 * report. */
STRATA_API strata_status strata_finalize(strata_runtime* rt, strata_error* err);

/* Optional: the host finished accumulating param `index`'s gradient for this micro-batch, which
 * lets reduction overlap the rest of backward. Call in the same order on every rank. */
STRATA_API strata_status strata_grad_ready(strata_runtime* rt, uint32_t index, strata_error* err);

typedef enum strata_step_outcome {
  STRATA_STEP_ACCUMULATED = 0, /* not an accumulation boundary: gradients kept, nothing applied */
  STRATA_STEP_APPLIED = 1,
  STRATA_STEP_SKIPPED = 2      /* non-finite gradients on some rank: every rank skipped */
} strata_step_outcome;

typedef struct strata_step_result {
  size_t struct_size;       /* since 1.0 */
  int32_t outcome;          /* strata_step_outcome (since 1.0) */
  double loss_scale;        /* scale to multiply the next micro-batch's loss by (since 1.0) */
  double grad_norm;         /* global unscaled norm before clipping (boundary steps only)
                               (since 1.0) */
  uint64_t global_steps;    /* optimizer steps taken so far, skipped ones included (since 1.0) */
  uint64_t skipped_steps;   /* since 1.0 */
  /* API 1.5: where this rank's wall time since the previous strata_step returned (since
   * strata_finalize returned, for the first) went, in seconds. The five parts add up to
   * wall_seconds; the runtime's part is everything but host_seconds. */
  double wall_seconds;          /* since 1.5 */
  double host_seconds;          /* outside runtime calls: the host's forward, backward, data
                                   (since 1.5) */
  double comm_wait_seconds;     /* in the comm stratum: starting collectives and blocked on them
                                   (a slower rank shows up here too) (since 1.5) */
  double optimizer_seconds;     /* the optimizer step, copies to the model and the loss-scale
                                   update, less their waits (since 1.5) */
  double gather_seconds;        /* strata_gather and strata_release, less their waits (since 1.5) */
  double runtime_other_seconds; /* the rest of the runtime calls' time: gradient copies and casts,
                                   the norm, bookkeeping (since 1.5) */
} strata_step_result;
#define STRATA_STEP_RESULT_SIZE_1_0 STRATA_STRUCT_SIZE(strata_step_result, skipped_steps)
#define STRATA_STEP_RESULT_SIZE_1_5 STRATA_STRUCT_SIZE(strata_step_result, runtime_other_seconds)

/* Call after every micro-batch's backward. Gradients are accumulated (+=) by the host into the
 * registered grad buffers; the runtime zeroes them after each boundary. Collective.
 *
 * The timeline (API 1.5): with the environment variable STRATA_TIMELINE=PATH, or the manifest's
 * "timeline": "PATH" (the variable wins), every rank records what the runtime and its plugins do
 * (each call, collective, wait, bucket, optimizer step, gather and release, skipped steps) and
 * strata_destroy writes one Chrome trace JSON at PATH with a track per rank (open it in Perfetto).
 * Events are buffered and written by a background thread, off the step's path. A rank that ends
 * in a failure or stall leaves its own events at PATH.rank<R>.json, with the failure's message. */
STRATA_API strata_status strata_step(strata_runtime* rt, strata_step_result* out,
                                     strata_error* err);

/* ---- API 1.1: parameter groups (a layer), gathered around the layer's forward and backward ----
 *
 * A host that wants ZeRO stage 3 to partition its parameters defines one group per layer before
 * finalize, and around each layer's forward and backward calls strata_gather / strata_release,
 * reading buffers only through strata_view_param in between. The same host runs unchanged at
 * stages 0-2, where gathering moves no parameters (at stage 2 release still reduces the lent
 * gradients, so gather and release stay collective there). The C++ SDK's strata::GatheredGroup is the
 * scope guard for this. */

/* Before finalize. `params` (count indices, read during the call) join a new group named `name`
 * (unique, non-empty); a parameter belongs to at most one group. Returns the dense group id. */
STRATA_API strata_status strata_define_group(strata_runtime* rt, const char* name,
                                             const uint32_t* params, size_t count,
                                             uint32_t* group, strata_error* err);
/* Makes the group's parameters readable; with STRATA_GATHER_FOR_BACKWARD also lends zeroed
 * gradient buffers for parameters registered with grad = NULL. Collective wherever the sharding
 * stage moves parameters or gradients on gather/release (stages 2-3 with plugins/zero; call it
 * alike on every rank at every stage): every rank gathers and releases the same groups in the same
 * order, and a divergence fails on every rank with an error naming the ranks and groups. */
STRATA_API strata_status strata_gather(strata_runtime* rt, uint32_t group, uint32_t flags,
                                       strata_error* err);
/* API 1.9: STRATA_GATHER_FOR_WRITE (alone or with FOR_BACKWARD) where the sharding plugin has
 * STRATA_SHARDING_WRITABLE_GATHER (plugins/zero at stage 3): the host writes the group's whole
 * values through strata_view_param's data, and strata_release makes them the parameters' values
 * (partitions, fp32 masters, a parameter store; the optimizer state is kept). Every rank must
 * write the same values (broadcast them first). Elsewhere refused with a message: at stages 0-2
 * the host's own buffers are the parameters. */
/* Ends the use of a gathered group: lent gradients are reduced, gathered parameters dropped. The
 * pointers strata_view_param gave for the group are invalid afterwards (touching them is undefined; the
 * view itself reports NULL). Same collectiveness as strata_gather. */
STRATA_API strata_status strata_release(strata_runtime* rt, uint32_t group, strata_error* err);
/* Where parameter `index` can be read and its gradient accumulated now (out->struct_size set by
 * the caller). NULL data: not gathered; NULL grad: no gradient buffer lent now. After finalize. */
STRATA_API strata_status strata_view_param(strata_runtime* rt, uint32_t index,
                                           strata_param_view* out, strata_error* err);

/* Current loss scale (1.0 when not scaling). */
STRATA_API strata_status strata_loss_scale(const strata_runtime* rt, double* scale);

/* Collectives on user host buffers, for metrics. Blocking; collective. */
STRATA_API strata_status strata_allreduce(strata_runtime* rt, const void* send, void* recv,
                                          uint64_t count, int32_t dtype, int32_t op,
                                          strata_error* err);
STRATA_API strata_status strata_allgather(strata_runtime* rt, const void* send, void* recv,
                                          uint64_t count_per_rank, int32_t dtype,
                                          strata_error* err);
STRATA_API strata_status strata_broadcast(strata_runtime* rt, void* buf, uint64_t count,
                                          int32_t dtype, int32_t root, strata_error* err);
STRATA_API strata_status strata_barrier(strata_runtime* rt, strata_error* err);

/* Bytes this rank holds, by strata_mem_category: params and grads registered by the host plus
 * everything plugins allocated through the host-services table or accounted with account_bytes.
 * These are sizes: a buffer may hold fewer resident pages (the zero plugin's gradient partition
 * gives its pages back between steps and takes them as backward fills it). */
typedef struct strata_memory_report {
  size_t struct_size; /* since 1.0 */
  /* Memory (host, pinned host and device together; never disk), by category. */
  uint64_t current[STRATA_MEM_CATEGORY_COUNT]; /* since 1.0 */
  uint64_t peak[STRATA_MEM_CATEGORY_COUNT]; /* since 1.0 */
  /* API 1.2: current bytes by strata_mem_location and category, disk included. */
  uint64_t located[STRATA_MEM_LOCATION_COUNT][STRATA_MEM_CATEGORY_COUNT]; /* since 1.2 */
} strata_memory_report;
#define STRATA_MEMORY_REPORT_SIZE_1_0 STRATA_STRUCT_SIZE(strata_memory_report, peak)
#define STRATA_MEMORY_REPORT_SIZE_1_2 STRATA_STRUCT_SIZE(strata_memory_report, located)

STRATA_API strata_status strata_memory(const strata_runtime* rt, strata_memory_report* out);

/* ---- API 1.6: checkpoints ----
 *
 * A checkpoint is a folder DIR/TAG holding metadata.json (versions, the manifest, world size,
 * stage, precision, every parameter's name, shape and dtype, the partition layout, the strata's
 * state, the counters, the host's extra state) and one file per rank, rankNNNNN.shard, with that
 * rank's part of the fp32 masters and of the optimizer state, each block with a checksum
 * (docs/DESIGN.md, "Checkpoints"). DIR/latest names the last complete one. A checkpoint loads at
 * any world size, ZeRO stage and precision: each rank reads the ranges it owns now. The
 * strata-ckpt tool inspects, verifies and consolidates one. */

typedef struct strata_save_args {
  size_t struct_size;     /* since 1.6 */
  const char* dir;        /* the checkpoint folder; created if missing (since 1.6) */
  const char* tag;        /* NULL: "global_step<N>" (N = global steps so far) (since 1.6) */
  const char* extra_json; /* the host's own state (a JSON object text: data position, RNG seeds),
                             given back by strata_load; NULL: none. Every rank's must be a valid
                             object; rank 0's is kept (as DeepSpeed keeps client_state)
                             (since 1.6) */
  int32_t blocking;       /* 0: return once the state is copied to memory, the files are written by
                             a background thread (strata_save_wait); 1: return when DIR/latest
                             names the new checkpoint (since 1.6) */
} strata_save_args;
#define STRATA_SAVE_ARGS_SIZE_1_6 STRATA_STRUCT_SIZE(strata_save_args, blocking)

/* Collective, between steps (at an accumulation boundary); every rank gives the same dir and tag.
 * Waits for an earlier save first. The step that saves pauses only for a copy of this rank's state
 * to memory; the writing goes on in a background thread while training continues. The checkpoint
 * is written under DIR/.TAG.partial and becomes DIR/TAG, and DIR/latest names it, only when every
 * rank's file is on the drive (written, fsynced, renamed, the folder fsynced): a job killed part-way
 * leaves the previous checkpoint as latest. Completion is noticed at a later boundary strata_step,
 * strata_save, strata_save_wait or strata_destroy. A failed write (a full drive) is logged when
 * noticed and fails the next strata_save or strata_save_wait, naming the rank and the file; DIR/latest
 * then still names the previous checkpoint. */
STRATA_API strata_status strata_save(strata_runtime* rt, const strata_save_args* args,
                                     strata_error* err);
/* Collective. Returns when no save is in progress and DIR/latest names the last one. */
STRATA_API strata_status strata_save_wait(strata_runtime* rt, strata_error* err);

typedef struct strata_load_args {
  size_t struct_size; /* since 1.6 */
  const char* dir; /* since 1.6 */
  const char* tag; /* NULL or "latest": the tag DIR/latest names (since 1.6) */
} strata_load_args;
#define STRATA_LOAD_ARGS_SIZE_1_6 STRATA_STRUCT_SIZE(strata_load_args, tag)

typedef struct strata_load_result {
  size_t struct_size;      /* since 1.6 */
  const char* tag;         /* the tag loaded; runtime-owned, valid until the next load or destroy
                              (since 1.6) */
  const char* extra_json;  /* the host state given to strata_save ("{}" when none); as `tag`
                              (since 1.6) */
  uint64_t global_steps;   /* the counters the next strata_step continues from (since 1.6) */
  uint64_t skipped_steps;  /* since 1.6 */
} strata_load_result;
#define STRATA_LOAD_RESULT_SIZE_1_6 STRATA_STRUCT_SIZE(strata_load_result, skipped_steps)

/* Collective, after strata_finalize and between steps. Loads parameters, fp32 masters, optimizer
 * state, the loss scaler (same model dtype only), the schedule and the counters, resharding to this
 * job's world size, stage and precision. A bad checkpoint (a truncated or bit-flipped shard, a
 * missing file, another model's parameters, a newer format) fails on every rank with a message
 * naming the file and what differs, and changes nothing that was not already overwritten: after a
 * failed load, load again or end the run. `out` may be NULL. */
STRATA_API strata_status strata_load(strata_runtime* rt, const strata_load_args* args,
                                     strata_load_result* out, strata_error* err);

/* ---- API 1.11: checkpoints the manifest asks for ----
 *
 * The manifest's "checkpoint" block, {"dir": DIR, "save_every": N, "auto_resume": true} (DIR
 * defaults to STRATA_CHECKPOINT_DIR, which strata-run --checkpoint-dir sets on every rank), makes
 * the runtime save asynchronously after every N-th optimizer step (tag "global_step<N>", as
 * strata_save with blocking 0) and, at the end of strata_finalize, load DIR's latest checkpoint if
 * it has one (a job restarted after a failure; a checkpoint that cannot be loaded fails
 * strata_finalize with the loader's message, and a folder that has a checkpoint on some ranks only
 * fails it on every rank). The host keeps its own state (data position, seeds) in these saves with
 * strata_set_host_state and reads it back with strata_resumed. */

/* The host state the next automatic save keeps, as strata_save's extra_json: a JSON object text,
 * copied. Set it before the strata_step that ends an optimizer step, describing where the data
 * continues after that step. Rank 0's is kept. Any time after strata_create; not thread-safe. */
STRATA_API strata_status strata_set_host_state(strata_runtime* rt, const char* extra_json,
                                               strata_error* err);
/* (An automatic save that fails, a full drive say, fails the strata_step that makes it, after that
 * step's optimizer update was applied; the previous checkpoint stays latest.) */
/* What the manifest's auto_resume loaded at strata_finalize, in strata_load's result form (the
 * strings live until the next load or destroy); out->tag is NULL and the counters 0 when nothing
 * was loaded (no checkpoint block, no auto_resume, or no checkpoint yet). After strata_finalize
 * (before it: STRATA_ERR_INVALID_ARGUMENT); not thread-safe. A host that resumed must not write
 * deferred values (API 1.9): the parameters hold the checkpoint's. */
STRATA_API strata_status strata_resumed(strata_runtime* rt, strata_load_result* out, strata_error* err);

/* ---- API 1.12: uneven data ----
 *
 * With the manifest's "join": true, a rank that has no more micro-batches calls strata_join
 * (Horovod's hvd.join(), PyTorch's Join). Collective: it returns on every rank once every rank has
 * called it. Until then the joined rank takes part in the others' micro-batches with zero
 * gradients: it repeats the runtime calls of its own last micro-batch (strata_gather,
 * strata_release, strata_grad_ready, strata_step; every micro-batch must make the same calls, as
 * stages 2-3 require anyway) and keeps serving its partitions at every ZeRO stage. At each
 * accumulation boundary the gradients are the mean over the micro-batches actually run (with
 * accumulation 1: the sum over the ranks that have not joined, divided by their number).
 *
 * "join" makes every micro-batch open, at its first runtime call, with a small allgather of which
 * ranks still contribute. The host's own strata_allreduce, strata_allgather and strata_barrier in
 * the data loop are repeated by a joined rank with the operation's identity (0 for a sum, the
 * lowest value for a max; zeros in an allgather), and an average then divides by the ranks that
 * contributed. strata_broadcast, strata_save, strata_save_wait and strata_load are refused
 * (STRATA_ERR_INVALID_ARGUMENT) while a rank has joined; the checkpoint block's automatic saves go
 * on. A learning rate the running ranks set with strata_set_lr reaches the joined ranks at each
 * boundary. Every micro-batch must make the same runtime calls in the same order: a joined rank's
 * replay of calls that differ from the others' fails every rank with STRATA_ERR_MISMATCH where the
 * calls are checked (gathers and releases at stages 2-3, and the previous micro-batch's calls at
 * each micro-batch's start), and may otherwise end in the stall watchdog's report. A micro-batch
 * that is not complete on every rank when the last one joins stays accumulated.
 * Call after the strata_step of this rank's last micro-batch, with at least one micro-batch run.
 * Calls made since that step (a metric allreduce, a save) open the next micro-batch, in which the
 * others count this rank: it then finishes that micro-batch by repeating the rest of its last one,
 * which must begin with those calls (else STRATA_ERR_INVALID_ARGUMENT on this rank, and the others
 * end with its message). A window in which no rank stepped a micro-batch of its own applies
 * nothing and is no optimizer step. `mirrored` (may be NULL) receives the number of micro-batches
 * this rank took part in inside strata_join, that one included. Without "join":
 * STRATA_ERR_UNSUPPORTED. Not thread-safe. */
STRATA_API strata_status strata_join(strata_runtime* rt, uint64_t* mirrored, strata_error* err);

/* ---- API 1.13: sub-groups of ranks ----
 *
 * The host's own collectives over a subset of the ranks (Horovod's process sets, tensor or pipeline
 * groups), through the comm stratum's split (plugin ABI 1.10; refused with STRATA_ERR_UNSUPPORTED
 * naming the plugin where it has none, or where it moves device memory only). A group's
 * collectives are blocking, on host buffers, and involve its members only; groups of different
 * ranks may run different collectives at the same time. They are the host's: not part of the
 * manifest's "join" (a joined rank repeats none of them). Not thread-safe (one thread at a time
 * with the runtime's other calls). */
typedef struct strata_group strata_group; /* opaque; owned by the runtime */

/* Collective over every rank, in the same order as the other collectives: the ranks that pass the
 * same color (>= 0) get a group of just them, ranked by key (ties: by world rank); a rank that
 * passes STRATA_COMM_SPLIT_NONE (-1) gets *out = NULL. The group lives until strata_group_destroy
 * or strata_destroy. After strata_create. */
STRATA_API strata_status strata_group_create(strata_runtime* rt, int32_t color, int32_t key,
                                             strata_group** out, strata_error* err);
/* This rank's place in the group. Cheap, no communication. */
STRATA_API strata_status strata_group_rank(const strata_group* group, int32_t* rank,
                                           int32_t* size);
/* As strata_allreduce, strata_allgather (recv: count_per_rank * group size), strata_broadcast
 * (root: a rank of the group) and strata_barrier, over the group's members. */
STRATA_API strata_status strata_group_allreduce(strata_group* group, const void* send, void* recv,
                                                uint64_t count, int32_t dtype, int32_t op,
                                                strata_error* err);
STRATA_API strata_status strata_group_allgather(strata_group* group, const void* send, void* recv,
                                                uint64_t count_per_rank, int32_t dtype,
                                                strata_error* err);
STRATA_API strata_status strata_group_broadcast(strata_group* group, void* buf, uint64_t count,
                                                int32_t dtype, int32_t root, strata_error* err);
STRATA_API strata_status strata_group_barrier(strata_group* group, strata_error* err);
/* This rank sends send_counts[r] elements from send + send_displs[r] to the group's rank r and
 * receives recv_counts[r] from it at recv + recv_displs[r] (elements of dtype; each array holds
 * the group's size entries; recv_counts[r] must equal rank r's send_counts[this rank]). A comm
 * stratum without alltoallv: STRATA_ERR_UNSUPPORTED. For every rank: make a group with color 0. */
STRATA_API strata_status strata_group_alltoallv(strata_group* group, const void* send,
                                                const uint64_t* send_counts,
                                                const uint64_t* send_displs, void* recv,
                                                const uint64_t* recv_counts,
                                                const uint64_t* recv_displs, int32_t dtype,
                                                strata_error* err);
/* Frees the group (its members need not call it together). NULL: nothing. */
STRATA_API strata_status strata_group_destroy(strata_runtime* rt, strata_group* group,
                                              strata_error* err);

/* The learning rate the next optimizer step uses: the host's override if set, else the schedule's
 * value (the manifest's "scheduler", DeepSpeed's types), else the optimizer's configured lr. */
STRATA_API strata_status strata_lr(const strata_runtime* rt, double* lr);
/* Overrides the learning rate from the next optimizer step on, until cleared with NaN (back to the
 * schedule). The schedule keeps counting steps underneath. lr must be finite and >= 0, or NaN. */
STRATA_API strata_status strata_set_lr(strata_runtime* rt, double lr, strata_error* err);

/* ---- API 1.7: CUDA devices ----
 *
 * Parameters (and gradient buffers) may live in CUDA device memory: register every parameter with
 * device = {STRATA_DEVICE_CUDA, ordinal}, all on the same device. strata_finalize refuses, naming
 * both, a comm plugin that cannot move the parameters' memory (caps.device_mask: allreduce-mpi
 * moves device memory only over a CUDA-aware MPI; allreduce-nccl moves device memory only), and
 * parameters on different devices. The memory report counts them at STRATA_MEM_DEVICE.
 *
 * Streams: the host enqueues forward and backward on one stream and names it here (NULL, the
 * default: the legacy default stream). Work the runtime and its plugins do for strata_grad_ready,
 * strata_gather and strata_release is ordered after everything the host enqueued on the stream
 * before the call and before everything it enqueues after (the calls may return before the device
 * has done it); strata_step returns when the step's device work is done. Before finalize or
 * between steps; not thread-safe (the thread that drives the runtime). */
STRATA_API strata_status strata_set_stream(strata_runtime* rt, void* cuda_stream, strata_error* err);

/* The release of libstrata loaded, "MAJOR.MINOR.PATCH" (the project's one version: strata-run
 * --version, the Python package's __version__ and the .deb and wheel names say the same). Static
 * storage, valid for the life of the process; thread-safe; callable before strata_create. Added in
 * API 1.8. */
STRATA_API const char* strata_version(void);

/* The host API the loaded libstrata implements, STRATA_API_VERSION_OF(major, minor): the major in
 * the high 16 bits, the minor in the low 16. A host built with this header needs the same major
 * and a minor at least that of the newest call it makes; a library of a later minor serves it
 * (the struct_size rule). Callable before strata_create; thread-safe. Added in API 1.10: a
 * library without this symbol is 1.9 or older. */
STRATA_API uint32_t strata_api_version(void);

/* Human-readable name of a status code or dtype (static storage). */
STRATA_API const char* strata_status_name(int32_t status);
STRATA_API const char* strata_dtype_name(int32_t dtype);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_STRATA_H */
