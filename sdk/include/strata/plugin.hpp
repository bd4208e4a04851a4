// strata/plugin.hpp — header-only helpers for plugin authors (C++17 or later).
//
// A plugin is C++ inside and C at the boundary. These helpers keep exceptions from crossing it
// (guard), write error records (set_error), wrap the host-services table (Host) and the comm
// stratum it lends (Comm), read create() arguments (read_create_args), and write the descriptor
// and entry point (STRATA_PLUGIN).
#pragma once

#include <strata/plugin_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

// Whether ops table `ops` (a pointer; any layout from 1.3) holds `field` of `type`: STRATA_STRUCT_HAS
// on the size its header declares. A table built with an older header is smaller, and the members
// past its end are absent (not NULL: they are not there to read).
#define STRATA_OPS_HAS(ops, type, field) STRATA_STRUCT_HAS(&(ops)->header, type, field)

// Put before the definition of strata_plugin_entry_v1. The SDK's strata_add_plugin() also applies a
// linker version script so that this is the only dynamic symbol the library exports.
#define STRATA_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

// Writes the plugin's descriptor and its entry point, strata_plugin_entry_v1. Use once per
// library, at namespace scope, after the ops table:
//   constexpr strata_offload_ops kOps = {.header = strata::sdk::ops_header<strata_offload_ops>(), ...};
//   STRATA_PLUGIN(kOps, "my-sgd", "1.0.0", "plain SGD on the host")
// The plugin declares that it needs a runtime of ABI 1.STRATA_ABI_MINOR_TABLES or later; one that
// calls services of a later minor only when present keeps that floor. A plugin that cannot work
// without a later minor's service says so with STRATA_PLUGIN_NEEDING(minor, ...).
#define STRATA_PLUGIN(ops, name, version, description) \
  STRATA_PLUGIN_NEEDING(STRATA_ABI_MINOR_TABLES, ops, name, version, description)
#define STRATA_PLUGIN_NEEDING(min_runtime_minor, ops, name, version, description)             \
  static_assert((min_runtime_minor) <= STRATA_ABI_MINOR,                                     \
                "STRATA_PLUGIN_NEEDING: the floor is above this header's STRATA_ABI_MINOR");  \
  STRATA_PLUGIN_EXPORT const strata_plugin_descriptor* strata_plugin_entry_v1(void) {         \
    static const strata_plugin_descriptor descriptor =                                       \
        ::strata::sdk::describe((ops), (min_runtime_minor), (name), (version), (description)); \
    return &descriptor;                                                                      \
  }

namespace strata::sdk {

// Thrown inside a plugin; guard() turns it into a status code and message.
class Error : public std::runtime_error {
 public:
  Error(strata_status code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  strata_status code() const noexcept { return code_; }

 private:
  strata_status code_;
};

[[noreturn]] inline void fail(strata_status code, const std::string& message) {
  throw Error(code, message);
}

inline strata_status set_error(strata_error* err, strata_status code, std::string_view message) {
  if (err != nullptr && err->struct_size >= sizeof(strata_error)) {
    err->code = code;
    const size_t n = std::min(message.size(), sizeof(err->message) - 1);
    std::memcpy(err->message, message.data(), n);
    err->message[n] = '\0';
  }
  return code;
}

// Runs `body` and converts any exception into a status plus message. Use it as the whole body of
// every function in an ops table.
template <class Body>
strata_status guard(strata_error* err, Body&& body) noexcept {
  try {
    body();
    return STRATA_OK;
  } catch (const Error& e) {
    return set_error(err, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return set_error(err, STRATA_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return set_error(err, STRATA_ERR_INTERNAL, e.what());
  } catch (...) {
    return set_error(err, STRATA_ERR_INTERNAL, "unknown exception");
  }
}

// Throws Error if a call into another stratum (through the host table) failed.
inline void check(strata_status status, const strata_error& err, std::string_view what) {
  if (status != STRATA_OK) {
    fail(status, std::string(what) + ": " + err.message);
  }
}

// Arrays cross the ABI as pointer + count (shard lists, counts); NULL is only valid when empty.
inline void require_array(const void* items, size_t count, const char* what) {
  if (items == nullptr && count > 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT, std::string(what) + ": NULL with count " + std::to_string(count));
  }
}

inline strata_error make_error() {
  strata_error e{};
  e.struct_size = sizeof(strata_error);
  return e;
}

// The plugin kind an ops table type belongs to.
template <class Ops>
constexpr strata_plugin_kind kind_of() {
  if constexpr (std::is_same_v<Ops, strata_comm_ops>) return STRATA_PLUGIN_COMM;
  else if constexpr (std::is_same_v<Ops, strata_sharding_ops>) return STRATA_PLUGIN_SHARDING;
  else if constexpr (std::is_same_v<Ops, strata_precision_ops>) return STRATA_PLUGIN_PRECISION;
  else if constexpr (std::is_same_v<Ops, strata_offload_ops>) return STRATA_PLUGIN_OFFLOAD;
  else static_assert(sizeof(Ops) == 0, "not a Strata ops table");
}

// The header every ops table starts with, for this SDK's ABI.
template <class Ops>
constexpr strata_ops_header ops_header() {
  return strata_ops_header{sizeof(Ops), STRATA_ABI_MAJOR, STRATA_ABI_MINOR,
                           static_cast<int32_t>(kind_of<Ops>()), 0u};
}

// The descriptor STRATA_PLUGIN writes. `min_runtime_minor` is the plugin's floor.
template <class Ops>
constexpr strata_plugin_descriptor describe(const Ops& ops, uint32_t min_runtime_minor,
                                            const char* name, const char* version,
                                            const char* description) {
  static_assert(offsetof(Ops, header) == 0, "an ops table starts with its strata_ops_header");
  return strata_plugin_descriptor{sizeof(strata_plugin_descriptor),
                                  STRATA_ABI_MAJOR,
                                  min_runtime_minor < STRATA_ABI_MINOR_TABLES
                                      ? STRATA_ABI_MINOR_TABLES
                                      : min_runtime_minor,
                                  static_cast<int32_t>(kind_of<Ops>()),
                                  name,
                                  version,
                                  description,
                                  &ops};
}

inline size_t dtype_size(int32_t dtype) {
  switch (dtype) {
    case STRATA_F32: case STRATA_I32: return 4;
    case STRATA_F16: case STRATA_BF16: return 2;
    case STRATA_F64: case STRATA_I64: return 8;
    case STRATA_U8: return 1;
    default: return 0;
  }
}

inline const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case STRATA_F32: return "f32";
    case STRATA_F16: return "f16";
    case STRATA_BF16: return "bf16";
    case STRATA_F64: return "f64";
    case STRATA_I32: return "i32";
    case STRATA_I64: return "i64";
    case STRATA_U8: return "u8";
    default: return "unknown-dtype";
  }
}

inline strata_buffer host_buffer(void* data, uint64_t count, int32_t dtype) {
  strata_buffer b{};
  b.struct_size = sizeof(strata_buffer);
  b.data = data;
  b.count = count;
  b.dtype = dtype;
  b.device = strata_device{STRATA_DEVICE_HOST, 0};
  return b;
}

// ---- ABI 1.6: the step's learning rate and momentum, checkpoints ----

// The learning rate of this step: args.lr where the runtime passed one (a 1.6 args struct) and it
// is not NaN (NaN: "as configured"), else `configured`. The caller still multiplies by lr_factor.
inline double step_lr(const strata_step_args& args, double configured) {
  if (STRATA_STRUCT_HAS(&args, strata_step_args, lr) && !std::isnan(args.lr)) return args.lr;
  return configured;
}
// The momentum of this step (Adam's beta1, SGD's momentum), with the same fallback as step_lr.
inline double step_momentum(const strata_step_args& args, double configured) {
  if (STRATA_STRUCT_HAS(&args, strata_step_args, momentum) && !std::isnan(args.momentum)) {
    return args.momentum;
  }
  return configured;
}

// Adam's beta2 for this step (ABI 1.6; DeepSpeed's OneCycle pins it while it cycles beta1), with
// the same fallback as step_lr.
inline double step_beta2(const strata_step_args& args, double configured) {
  if (STRATA_STRUCT_HAS(&args, strata_step_args, beta2) && !std::isnan(args.beta2)) {
    return args.beta2;
  }
  return configured;
}

// A step's arguments as this header declares them, lr, momentum and beta2 "as configured" (NaN):
// for tests and hosts that drive an offload plugin themselves.
inline strata_step_args make_step_args(uint64_t step, double grad_scale = 1.0,
                                       double lr_factor = 1.0) {
  strata_step_args a{};
  a.struct_size = sizeof(a);
  a.step = step;
  a.grad_scale = grad_scale;
  a.lr_factor = lr_factor;
  a.lr = std::nan("");
  a.momentum = std::nan("");
  a.beta2 = std::nan("");
  return a;
}

// Writes `text` for save_state with its protocol: *length = the text's length (NUL excluded);
// the text and its NUL go into `buffer` only when they fit in `capacity`, else nothing is written
// and the runtime, seeing *length >= capacity, calls again with a buffer of *length + 1 bytes.
inline void write_state_text(std::string_view text, char* buffer, size_t capacity,
                             size_t* length) {
  if (length == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, "save_state: length is NULL");
  if (buffer == nullptr && capacity > 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         "save_state: buffer is NULL with capacity " + std::to_string(capacity));
  }
  *length = text.size();
  if (text.size() < capacity) {
    std::memcpy(buffer, text.data(), text.size());
    buffer[text.size()] = '\0';
  }
}

// read_state()/write_state() arguments, checked against this plugin's state: the struct is there
// and holds `data`, `shard` < shards, `slot` < slots, [first, first + count) inside the shard's
// `shard_elements(shard)` elements, and data is non-NULL when count > 0. Errors name the call,
// the shard, the slot and the range, and what was expected. `call`: "read_state" or "write_state".
template <class ShardElements>
const strata_state_io_args& check_state_io(const strata_state_io_args* args, const char* call,
                                           size_t shards, uint32_t slots,
                                           const ShardElements& shard_elements) {
  // Messages are built only on failure: read_state is the checkpoint's pause, called per range.
  const auto where = [&] {
    return std::string(call) + ": shard " + std::to_string(args->shard) + " slot " +
           std::to_string(args->slot);
  };
  if (args == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, std::string(call) + ": args is NULL");
  if (!STRATA_STRUCT_HAS(args, strata_state_io_args, data)) {
    fail(STRATA_ERR_ABI, std::string(call) + ": args struct_size " +
                             std::to_string(args->struct_size) + " is too small to hold data (" +
                             std::to_string(STRATA_STATE_IO_ARGS_SIZE_1_6) +
                             ")");
  }
  if (args->shard >= shards) {
    fail(STRATA_ERR_INVALID_ARGUMENT, std::string(call) + ": shard " +
                                          std::to_string(args->shard) +
                                          " out of range: init_state had " +
                                          std::to_string(shards) + " shards");
  }
  if (args->slot >= slots) {
    fail(STRATA_ERR_INVALID_ARGUMENT, where() + " out of range: the optimizer keeps " +
                                          std::to_string(slots) + " slots");
  }
  const uint64_t n = static_cast<uint64_t>(shard_elements(static_cast<size_t>(args->shard)));
  if (args->first > n || args->count > n - args->first) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         where() + " elements [" + std::to_string(args->first) + ", " +
             std::to_string(args->first) + " + " + std::to_string(args->count) +
             ") out of range: the shard has " + std::to_string(n) + " elements");
  }
  if (args->data == nullptr && args->count > 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         where() + ": data is NULL with count " + std::to_string(args->count));
  }
  return *args;
}

// create()'s arguments, checked: a NULL or too-small args struct fails with a message; a NULL
// config reads as "{}".
struct CreateArgs {
  const char* config_json;
  const strata_host_api* host;
};

inline CreateArgs read_create_args(const strata_plugin_create_args* args) {
  if (args == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, "create: args is NULL");
  if (!STRATA_STRUCT_HAS(args, strata_plugin_create_args, host)) {
    fail(STRATA_ERR_ABI, "create: args struct_size " + std::to_string(args->struct_size) +
                             " is too small to hold config_json and host");
  }
  return CreateArgs{args->config_json != nullptr ? args->config_json : "{}", args->host};
}

// The comm table's `field`, or NULL when the table's header says it ends before it.
#define STRATA_SDK_COMM_FN(field) \
  (STRATA_OPS_HAS(ops_, strata_comm_ops, field) ? ops_->field : nullptr)

// A comm stratum instance (the one a host-services table lends, or one a test created), with the
// collectives as C++ calls: each builds its strata_coll_args and throws Error on failure, naming
// the collective. Not owning; copy freely. Same thread rules as strata_comm_ops.
class Comm {
 public:
  Comm() = default;
  Comm(const strata_comm_ops* ops, void* self) : ops_(ops), self_(self) {}

  const strata_comm_ops* ops() const { return ops_; }
  void* self() const { return self_; }
  // Optional collectives are NULL, or absent from an older (smaller) table, when the plugin does
  // not support them. Every member is read through STRATA_OPS_HAS.
  bool has_allgatherv() const { return STRATA_SDK_COMM_FN(allgatherv) != nullptr; }
  bool has_reduce_scatter() const { return STRATA_SDK_COMM_FN(reduce_scatter) != nullptr; }
  bool has_wait() const { return STRATA_SDK_COMM_FN(wait) != nullptr; }
  bool has_test() const { return STRATA_SDK_COMM_FN(test) != nullptr; }

  strata_comm_caps query() const {
    const auto fn = STRATA_SDK_COMM_FN(query);
    if (fn == nullptr) fail(STRATA_ERR_UNSUPPORTED, "comm query: not in the comm stratum's table");
    strata_comm_caps caps{};
    caps.struct_size = sizeof(caps);
    strata_error err = make_error();
    check(fn(self_, &caps, &err), err, "comm query");
    return caps;
  }

  void allreduce(const strata_buffer& send, const strata_buffer& recv, strata_reduce_op op,
                 strata_request* req = nullptr) const {
    strata_coll_args a = args(&send, &recv);
    a.op = op;
    run("allreduce", STRATA_SDK_COMM_FN(allreduce), a, req);
  }
  void allgather(const strata_buffer& send, const strata_buffer& recv,
                 strata_request* req = nullptr) const {
    run("allgather", STRATA_SDK_COMM_FN(allgather), args(&send, &recv), req);
  }
  void allgatherv(const strata_buffer& send, const strata_buffer& recv, const uint64_t* recv_counts,
                  const uint64_t* displs, strata_request* req = nullptr) const {
    strata_coll_args a = args(&send, &recv);
    a.recv_counts = recv_counts;
    a.displs = displs;
    run("allgatherv", STRATA_SDK_COMM_FN(allgatherv), a, req);
  }
  void reduce_scatter(const strata_buffer& send, const strata_buffer& recv, strata_reduce_op op,
                      strata_request* req = nullptr) const {
    strata_coll_args a = args(&send, &recv);
    a.op = op;
    run("reduce_scatter", STRATA_SDK_COMM_FN(reduce_scatter), a, req);
  }
  void broadcast(const strata_buffer& buf, int32_t root, strata_request* req = nullptr) const {
    strata_coll_args a = args(nullptr, &buf);
    a.root = root;
    run("broadcast", STRATA_SDK_COMM_FN(broadcast), a, req);
  }
  void barrier(strata_request* req = nullptr) const {
    run("barrier", STRATA_SDK_COMM_FN(barrier), args(nullptr, nullptr), req);
  }
  // Completes `req`; a comm without wait throws Error(STRATA_ERR_UNSUPPORTED).
  void wait(strata_request req) const {
    const auto fn = STRATA_SDK_COMM_FN(wait);
    if (fn == nullptr) fail(STRATA_ERR_UNSUPPORTED, "comm wait: not supported");
    strata_error err = make_error();
    check(fn(self_, req, &err), err, "comm wait");
  }
  // Whether `req` has completed, without blocking; a comm without test throws
  // Error(STRATA_ERR_UNSUPPORTED) (check has_test() and call wait() instead).
  bool test(strata_request req) const {
    const auto fn = STRATA_SDK_COMM_FN(test);
    if (fn == nullptr) fail(STRATA_ERR_UNSUPPORTED, "comm test: not supported");
    int32_t done = 0;
    strata_error err = make_error();
    check(fn(self_, req, &done, &err), err, "comm test");
    return done != 0;
  }

  // ABI 1.10, optional: check has_alltoallv() / has_split() first (else UNSUPPORTED).
  bool has_alltoallv() const { return STRATA_SDK_COMM_FN(alltoallv) != nullptr; }
  bool has_split() const { return STRATA_SDK_COMM_FN(split) != nullptr; }
  void alltoallv(const strata_buffer& send, const uint64_t* send_counts,
                 const uint64_t* send_displs, const strata_buffer& recv,
                 const uint64_t* recv_counts, const uint64_t* recv_displs,
                 strata_request* req = nullptr) const {
    strata_coll_args a = args(&send, &recv);
    a.send_counts = send_counts;
    a.send_displs = send_displs;
    a.recv_counts = recv_counts;
    a.displs = recv_displs;
    run("alltoallv", STRATA_SDK_COMM_FN(alltoallv), a, req);
  }
  // The sub-group instance of the ranks that pass `color` (collective), used through this same
  // table; nullptr for STRATA_COMM_SPLIT_NONE. The caller destroys it (ops()->destroy).
  void* split(int32_t color, int32_t key) const {
    const auto fn = STRATA_SDK_COMM_FN(split);
    if (fn == nullptr) fail(STRATA_ERR_UNSUPPORTED, "split: not supported by the comm stratum");
    strata_comm_split_args a{};
    a.struct_size = sizeof(a);
    a.color = color;
    a.key = key;
    void* child = nullptr;
    strata_error err = make_error();
    check(fn(self_, &a, &child, &err), err, "split");
    return child;
  }

  static strata_coll_args args(const strata_buffer* send, const strata_buffer* recv) {
    strata_coll_args a{};
    a.struct_size = sizeof(a);
    a.send = send;
    a.recv = recv;
    return a;
  }

 private:
  using Collective = strata_status (*)(void*, const strata_coll_args*, strata_request*,
                                       strata_error*);
  void run(const char* what, Collective fn, const strata_coll_args& a, strata_request* req) const {
    if (fn == nullptr) fail(STRATA_ERR_UNSUPPORTED, std::string(what) + ": not supported by the comm stratum");
    strata_error err = make_error();
    check(fn(self_, &a, req, &err), err, what);
  }

  const strata_comm_ops* ops_ = nullptr;
  void* self_ = nullptr;
};

#undef STRATA_SDK_COMM_FN

// Thin view of the host-services table handed to create(). Not owning; copy freely.
class Host {
 public:
  Host() = default;
  // Needs the table's 1.0 fields, through precision_self (comm(), comm_self() and precision()
  // read them); later ones are checked where they are used.
  explicit Host(const strata_host_api* api) : api_(api) {
    if (api_ == nullptr) fail(STRATA_ERR_ABI, "host-services table is NULL");
    if (!STRATA_STRUCT_HAS(api_, strata_host_api, precision_self)) {
      fail(STRATA_ERR_ABI, "host-services table struct_size " + std::to_string(api_->struct_size) +
                               " is smaller than " +
                               std::to_string(STRATA_HOST_API_SIZE_1_0) +
                               ", its size in ABI 1.0 (through precision_self)");
    }
  }
  const strata_host_api* raw() const { return api_; }
  // The runtime's ABI minor: services of later minors are absent.
  uint32_t runtime_minor() const { return api_->runtime_minor; }

  // Whether a line at `level` would be written (ABI 1.4; older runtimes: always true).
  bool log_enabled(strata_log_level level) const {
    if (!STRATA_STRUCT_HAS(api_, strata_host_api, log_enabled) || api_->log_enabled == nullptr) {
      return true;
    }
    return api_->log_enabled(api_->host_ctx, level) != 0;
  }

  void log(strata_log_level level, const char* fmt, ...) const __attribute__((format(printf, 3, 4))) {
    if (!log_enabled(level)) return;  // skip formatting lines nobody reads
    char line[1024];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    api_->log(api_->host_ctx, level, line);
  }

  void* alloc(size_t bytes, strata_mem_category category, size_t alignment = 64) const {
    void* p = api_->alloc_bytes(api_->host_ctx, bytes, alignment, category);
    if (p == nullptr && bytes != 0) {
      fail(STRATA_ERR_OUT_OF_MEMORY,
           "could not allocate " + std::to_string(bytes) + " bytes");
    }
    return p;
  }
  void free(void* p) const { api_->free_bytes(api_->host_ctx, p); }

  // ABI 1.2 hosts can place memory and account disk bytes; older hosts cannot.
  bool has_locations() const {
    return STRATA_STRUCT_HAS(api_, strata_host_api, account_bytes) &&
           api_->alloc_bytes_at != nullptr && api_->account_bytes != nullptr;
  }
  // Page-locked accounted memory, or nullptr when the host is older than 1.2 or the system refuses
  // to lock the pages (the caller decides whether to fall back to alloc()).
  void* try_alloc_pinned(size_t bytes, strata_mem_category category, size_t alignment = 64) const {
    if (!has_locations()) return nullptr;
    return api_->alloc_bytes_at(api_->host_ctx, bytes, alignment, category,
                                STRATA_MEM_HOST_PINNED);
  }
  // ---- ABI 1.7: CUDA devices ----

  // The job's device (where the parameters are), from finalize on; older runtimes, which have
  // host parameters only: STRATA_DEVICE_HOST.
  strata_device device() const {
    if (!STRATA_STRUCT_HAS(api_, strata_host_api, device) || api_->device == nullptr) {
      return strata_device{STRATA_DEVICE_HOST, 0};
    }
    return api_->device(api_->host_ctx);
  }
  bool on_cuda() const { return device().type == STRATA_DEVICE_CUDA; }
  // The cudaStream_t the host enqueues its work on, valid for the current runtime call; nullptr
  // is the legacy default stream (and what an older runtime, which knows no streams, means).
  void* cuda_stream() const {
    if (!STRATA_STRUCT_HAS(api_, strata_host_api, cuda_stream) || api_->cuda_stream == nullptr) {
      return nullptr;
    }
    return api_->cuda_stream(api_->host_ctx);
  }
  // Whether alloc_bytes_at takes STRATA_MEM_DEVICE (a 1.7 runtime; it may still return NULL).
  bool has_device_alloc() const {
    return has_locations() && STRATA_STRUCT_HAS(api_, strata_host_api, cuda_stream);
  }
  // Accounted memory on the job's CUDA device (free with free()), or nullptr when the runtime is
  // older than 1.7, was built without CUDA, the job has no device, or the device is full.
  void* try_alloc_device(size_t bytes, strata_mem_category category, size_t alignment = 256) const {
    if (!has_device_alloc()) return nullptr;
    return api_->alloc_bytes_at(api_->host_ctx, bytes, alignment, category, STRATA_MEM_DEVICE);
  }
  // As try_alloc_device, but throws Error(STRATA_ERR_OUT_OF_MEMORY) naming the bytes and why.
  void* alloc_device(size_t bytes, strata_mem_category category, size_t alignment = 256) const {
    void* p = try_alloc_device(bytes, category, alignment);
    if (p == nullptr && bytes != 0) {
      fail(STRATA_ERR_OUT_OF_MEMORY,
           "could not allocate " + std::to_string(bytes) + " bytes of device memory" +
               (has_device_alloc() ? std::string(" (runtime built without CUDA, no device for "
                                                 "this job, or the device is full)")
                                   : " (the runtime is older than ABI 1.7)"));
    }
    return p;
  }

  // Records bytes held outside the allocator (files); a no-op on hosts older than 1.2.
  void account(strata_mem_category category, strata_mem_location location, int64_t delta) const {
    if (has_locations()) api_->account_bytes(api_->host_ctx, category, location, delta);
  }

  // The comm stratum, or throws if this plugin was created without one.
  const strata_comm_ops& comm() const {
    if (api_->comm == nullptr) fail(STRATA_ERR_UNSUPPORTED, "no comm stratum available");
    return *api_->comm;
  }
  void* comm_self() const { return api_->comm_self; }
  // The lent comm stratum as a Comm, or throws if this plugin was created without one.
  Comm comm_stratum() const { return Comm(&comm(), api_->comm_self); }
  const strata_precision_ops* precision() const { return api_->precision; }
  void* precision_self() const { return api_->precision_self; }

  // Whether the job records a timeline (ABI 1.5; older runtimes: false). Fixed for the runtime's
  // lifetime: ask once (sdk::Tracer does).
  bool trace_enabled() const {
    return STRATA_STRUCT_HAS(api_, strata_host_api, trace_span) && api_->trace_enabled != nullptr &&
           api_->trace_span != nullptr && api_->trace_enabled(api_->host_ctx) != 0;
  }

 private:
  const strata_host_api* api_ = nullptr;
};

// Records spans of a plugin's work on the job's timeline (ABI 1.5). Asks the runtime once whether
// a timeline is recorded; when none is, now() reads no clock and span() does nothing, so the
// calls can stay in the hot path. Copyable; thread-safe.
class Tracer {
 public:
  Tracer() = default;
  explicit Tracer(const Host& host)
      : api_(host.raw()), enabled_(host.trace_enabled()) {}

  bool enabled() const { return enabled_; }
  // CLOCK_MONOTONIC in ns when a timeline is recorded, else 0.
  int64_t now() const { return enabled_ ? monotonic_ns() : 0; }
  // One span from `begin_ns` (a now()) to now. `name` must be a string literal.
  void span(const char* name, int64_t begin_ns, int64_t index = -1, uint64_t bytes = 0) const {
    if (enabled_) span(name, begin_ns, monotonic_ns(), index, bytes);
  }
  void span(const char* name, int64_t begin_ns, int64_t end_ns, int64_t index, uint64_t bytes,
            uint32_t flags = 0) const {
    if (!enabled_) return;
    strata_trace_span s{};
    s.struct_size = sizeof(s);
    s.name = name;
    s.begin_ns = begin_ns;
    s.end_ns = end_ns;
    s.index = index;
    s.bytes = bytes;
    s.flags = flags;
    api_->trace_span(api_->host_ctx, &s);
  }
  // Work in flight from `begin_ns` to now (a non-blocking collective from its start to its
  // completion), which may overlap the thread's other spans: drawn on a track of its own.
  void in_flight(const char* name, int64_t begin_ns, int64_t index = -1, uint64_t bytes = 0) const {
    if (enabled_) span(name, begin_ns, monotonic_ns(), index, bytes, STRATA_TRACE_IN_FLIGHT);
  }

  static int64_t monotonic_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

 private:
  const strata_host_api* api_ = nullptr;
  bool enabled_ = false;
};

// A span from construction to destruction (RAII); free when the timeline is off.
class TraceScope {
 public:
  TraceScope(const Tracer& tracer, const char* name, int64_t index = -1, uint64_t bytes = 0)
      : tracer_(tracer), name_(name), index_(index), bytes_(bytes), begin_(tracer.now()) {}
  ~TraceScope() { tracer_.span(name_, begin_, index_, bytes_); }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  const Tracer& tracer_;
  const char* name_;
  int64_t index_;
  uint64_t bytes_;
  int64_t begin_;
};

// An accounted, aligned, zero-initialised array freed through the host table (RAII).
template <class T>
class HostArray {
 public:
  HostArray() = default;
  HostArray(const Host& host, size_t count, strata_mem_category category)
      : host_(host), count_(count) {
    data_ = static_cast<T*>(host_.alloc(count * sizeof(T), category));
    if (data_ != nullptr) std::memset(static_cast<void*>(data_), 0, count * sizeof(T));
  }
  HostArray(const HostArray&) = delete;
  HostArray& operator=(const HostArray&) = delete;
  HostArray(HostArray&& o) noexcept { swap(o); }
  HostArray& operator=(HostArray&& o) noexcept {
    HostArray tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~HostArray() {
    if (data_ != nullptr) host_.free(data_);
  }
  T* data() const { return data_; }
  size_t size() const { return count_; }
  T& operator[](size_t i) const { return data_[i]; }

 private:
  void swap(HostArray& o) noexcept {
    std::swap(host_, o.host_);
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
  }
  Host host_;
  T* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace strata::sdk
