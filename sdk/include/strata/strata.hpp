// strata/strata.hpp — header-only C++17 RAII wrapper over the host C API (strata/strata.h).
//
// A training host owns one strata::Runtime. Every call that fails throws strata::Error carrying the
// status code and the runtime's one-line message, so a host can write its loop without checking
// status codes and still tell the user exactly what went wrong.
#pragma once

#include <strata/strata.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

// A failed runtime call: status() says which kind, what() the runtime's message.
class Error : public std::runtime_error {
 public:
  Error(strata_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  strata_status status() const noexcept { return status_; }
  const char* status_name() const noexcept { return strata_status_name(status_); }

 private:
  strata_status status_;
};

namespace detail {

inline strata_error make_error() {
  strata_error err{};
  err.struct_size = sizeof(strata_error);
  return err;
}

// Throws when `status` is not OK; the message is the runtime's, or names the call if it gave none.
inline void check(strata_status status, const strata_error& err, const char* call) {
  if (status == STRATA_OK) return;
  std::string message = err.message[0] != '\0'
                            ? std::string(err.message)
                            : std::string(call) + " failed: " + strata_status_name(status);
  throw Error(status, message);
}

// For the calls that take no strata_error (world, training, loss_scale, memory, lr).
inline void check(strata_status status, const char* call) {
  if (status != STRATA_OK) {
    throw Error(status, std::string(call) + " failed: " + strata_status_name(status));
  }
}

template <class T>
constexpr strata_dtype dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return STRATA_F32;
  else if constexpr (std::is_same_v<T, double>)
    return STRATA_F64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return STRATA_I32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return STRATA_I64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return STRATA_U8;
  else
    static_assert(sizeof(T) == 0, "no strata_dtype for this type");
}

}  // namespace detail

using WorldInfo = strata_world_info;
using TrainingInfo = strata_training_info;
using MemoryReport = strata_memory_report;
using ParamView = strata_param_view;

// What strata_load restored (API 1.6): the tag it read, the host's own state as given to save(),
// and the counters the next step() continues from.
struct LoadResult {
  std::string tag;
  std::string extra_json;  // "{}" when the save had none
  uint64_t global_steps = 0;
  uint64_t skipped_steps = 0;
};

// What strata_step did: outcome plus the counters a host logs.
struct StepResult {
  strata_step_outcome outcome = STRATA_STEP_ACCUMULATED;
  double loss_scale = 1.0;
  double grad_norm = 0.0;
  uint64_t global_steps = 0;
  uint64_t skipped_steps = 0;
  // Where this rank's time since the previous step() returned went (API 1.5; strata.h says what
  // each part holds). The parts add up to wall.
  struct Time {
    double wall = 0.0;
    double host = 0.0;
    double comm_wait = 0.0;
    double optimizer = 0.0;
    double gather = 0.0;
    double runtime_other = 0.0;
    // The runtime's part: everything but the host's own work.
    double runtime() const { return comm_wait + optimizer + gather + runtime_other; }
    Time& operator+=(const Time& o) {
      wall += o.wall;
      host += o.host;
      comm_wait += o.comm_wait;
      optimizer += o.optimizer;
      gather += o.gather;
      runtime_other += o.runtime_other;
      return *this;
    }
  } time;

  bool applied() const { return outcome == STRATA_STEP_APPLIED; }
  bool skipped() const { return outcome == STRATA_STEP_SKIPPED; }
  // True at an accumulation boundary, whether the update was applied or skipped.
  bool boundary() const { return outcome != STRATA_STEP_ACCUMULATED; }
};

class Runtime {
 public:
  // Reads the manifest file; `overrides_json` (a JSON object, RFC 7386 merge patch) may be empty.
  explicit Runtime(const std::string& manifest_path, const std::string& overrides_json = {}) {
    strata_create_options options = base_options(overrides_json);
    options.manifest_path = manifest_path.c_str();
    create(options);
  }

  // Manifest given inline; plugin names are looked up first in `base_dir` (empty: current dir).
  static Runtime from_json(const std::string& manifest_json, const std::string& base_dir = {},
                           const std::string& overrides_json = {}) {
    strata_create_options options = base_options(overrides_json);
    options.manifest_json = manifest_json.c_str();
    options.base_dir = base_dir.empty() ? nullptr : base_dir.c_str();
    return Runtime(options);
  }

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  Runtime(Runtime&& other) noexcept : rt_(std::exchange(other.rt_, nullptr)) {}
  Runtime& operator=(Runtime&& other) noexcept {
    if (this != &other) {
      strata_destroy(rt_);
      rt_ = std::exchange(other.rt_, nullptr);
    }
    return *this;
  }
  ~Runtime() { strata_destroy(rt_); }

  strata_runtime* get() const noexcept { return rt_; }

  WorldInfo world() const {
    WorldInfo info{};
    info.struct_size = sizeof(info);
    detail::check(strata_world(rt_, &info), "strata_world");
    return info;
  }

  TrainingInfo training() const {
    TrainingInfo info{};
    info.struct_size = sizeof(info);
    detail::check(strata_training(rt_, &info), "strata_training");
    return info;
  }

  // Registers a parameter; returns its index. `data` holds the initial values; `grad` may be null
  // (the runtime then provides gradient storage, reached through view()). Non-null buffers stay
  // host-owned and must outlive the runtime.
  uint32_t register_param(const std::string& name, strata_dtype dtype, void* data, void* grad,
                          uint64_t count) {
    return register_param(name, dtype, data, grad, count, strata_device{STRATA_DEVICE_HOST, 0});
  }

  // A parameter in `device`'s memory (API 1.7: {STRATA_DEVICE_CUDA, ordinal}; data and grad are
  // device pointers there, grad NULL: the job provides gradient storage on that device).
  uint32_t register_param(const std::string& name, strata_dtype dtype, void* data, void* grad,
                          uint64_t count, strata_device device) {
    strata_param_desc desc{};
    desc.struct_size = sizeof(desc);
    desc.name = name.c_str();
    desc.dtype = dtype;
    desc.device = device;
    desc.count = count;
    desc.data = data;
    desc.grad = grad;
    uint32_t index = 0;
    strata_error err = detail::make_error();
    detail::check(strata_register_param(rt_, &desc, &index, &err), err, "strata_register_param");
    return index;
  }

  uint32_t register_param(const std::string& name, float* data, float* grad, uint64_t count) {
    return register_param(name, STRATA_F32, data, grad, count);
  }

  void finalize() { call(&strata_finalize, "strata_finalize"); }

  // ---- parameter groups (API 1.1): gather a layer around its forward and backward ----

  // Before finalize: `params` (indices from register_param) form the group `name`; returns its id.
  uint32_t define_group(const std::string& name, const std::vector<uint32_t>& params) {
    uint32_t group = 0;
    strata_error err = detail::make_error();
    detail::check(strata_define_group(rt_, name.c_str(), params.data(), params.size(), &group, &err),
                  err, "strata_define_group");
    return group;
  }

  // Prefer GatheredGroup, which releases on every exit path.
  void gather(uint32_t group, uint32_t flags = 0) {
    strata_error err = detail::make_error();
    detail::check(strata_gather(rt_, group, flags, &err), err, "strata_gather");
  }

  void release(uint32_t group) {
    strata_error err = detail::make_error();
    detail::check(strata_release(rt_, group, &err), err, "strata_release");
  }

  // Where parameter `index` is readable and its gradient writable now (nulls when not available).
  ParamView view(uint32_t index) {
    ParamView out{};
    out.struct_size = sizeof(out);
    strata_error err = detail::make_error();
    detail::check(strata_view_param(rt_, index, &out, &err), err, "strata_view_param");
    return out;
  }

  void grad_ready(uint32_t index) {
    strata_error err = detail::make_error();
    detail::check(strata_grad_ready(rt_, index, &err), err, "strata_grad_ready");
  }

  StepResult step() {
    strata_step_result raw{};
    raw.struct_size = sizeof(raw);
    strata_error err = detail::make_error();
    detail::check(strata_step(rt_, &raw, &err), err, "strata_step");
    StepResult result;
    result.outcome = static_cast<strata_step_outcome>(raw.outcome);
    result.loss_scale = raw.loss_scale;
    result.grad_norm = raw.grad_norm;
    result.global_steps = raw.global_steps;
    result.skipped_steps = raw.skipped_steps;
    result.time = {raw.wall_seconds,      raw.host_seconds,   raw.comm_wait_seconds,
                   raw.optimizer_seconds, raw.gather_seconds, raw.runtime_other_seconds};
    return result;
  }

  double loss_scale() const {
    double scale = 1.0;
    detail::check(strata_loss_scale(rt_, &scale), "strata_loss_scale");
    return scale;
  }

  // ---- collectives on host buffers, for metrics (blocking, every rank calls them alike) ----

  void allreduce(const void* send, void* recv, uint64_t count, strata_dtype dtype,
                 strata_reduce_op op) {
    strata_error err = detail::make_error();
    detail::check(strata_allreduce(rt_, send, recv, count, dtype, op, &err), err,
                  "strata_allreduce");
  }

  template <class T>
  void allreduce(T* values, uint64_t count, strata_reduce_op op = STRATA_SUM) {
    allreduce(values, values, count, detail::dtype_of<T>(), op);
  }

  template <class T>
  T allreduce(T value, strata_reduce_op op = STRATA_SUM) {
    allreduce(&value, 1, op);
    return value;
  }

  // recv holds count_per_rank × world size elements; rank r's block lands at r × count_per_rank.
  void allgather(const void* send, void* recv, uint64_t count_per_rank, strata_dtype dtype) {
    strata_error err = detail::make_error();
    detail::check(strata_allgather(rt_, send, recv, count_per_rank, dtype, &err), err,
                  "strata_allgather");
  }

  template <class T>
  void allgather(const T* send, T* recv, uint64_t count_per_rank) {
    allgather(send, recv, count_per_rank, detail::dtype_of<T>());
  }

  void broadcast(void* buf, uint64_t count, strata_dtype dtype, int root = 0) {
    strata_error err = detail::make_error();
    detail::check(strata_broadcast(rt_, buf, count, dtype, root, &err), err, "strata_broadcast");
  }

  template <class T>
  void broadcast(T* values, uint64_t count, int root = 0) {
    broadcast(values, count, detail::dtype_of<T>(), root);
  }

  void barrier() { call(&strata_barrier, "strata_barrier"); }

  // ---- checkpoints and the learning rate (API 1.6) ----

  // Collective, between steps. Saves DIR/TAG (tag empty: "global_step<N>"); extra_json is the
  // host's own state (a JSON object text, empty for none), given back by load(). Non-blocking by
  // default: returns once this rank's state is copied to memory, the files are written in the
  // background (save_wait() waits for them); blocking: returns when DIR/latest names it.
  void save(const std::string& dir, const std::string& tag = {},
            const std::string& extra_json = {}, bool blocking = false) {
    strata_save_args args{};
    args.struct_size = sizeof(args);
    args.dir = dir.c_str();
    args.tag = tag.empty() ? nullptr : tag.c_str();
    args.extra_json = extra_json.empty() ? nullptr : extra_json.c_str();
    args.blocking = blocking ? 1 : 0;
    strata_error err = detail::make_error();
    detail::check(strata_save(rt_, &args, &err), err, "strata_save");
  }

  // Collective. Returns when no save is in progress and DIR/latest names the last one.
  void save_wait() { call(&strata_save_wait, "strata_save_wait"); }

  // Collective, after finalize and between steps. Loads DIR/TAG (tag empty or "latest": the tag
  // DIR/latest names) at this job's world size, stage and precision.
  LoadResult load(const std::string& dir, const std::string& tag = {}) {
    strata_load_args args{};
    args.struct_size = sizeof(args);
    args.dir = dir.c_str();
    args.tag = tag.empty() ? nullptr : tag.c_str();
    strata_load_result raw{};
    raw.struct_size = sizeof(raw);
    strata_error err = detail::make_error();
    detail::check(strata_load(rt_, &args, &raw, &err), err, "strata_load");
    LoadResult result;
    // The runtime's strings live until the next load or destroy: copy them.
    result.tag = raw.tag != nullptr ? raw.tag : "";
    result.extra_json = raw.extra_json != nullptr ? raw.extra_json : "{}";
    result.global_steps = raw.global_steps;
    result.skipped_steps = raw.skipped_steps;
    return result;
  }

  // The manifest's checkpoint block (API 1.11): the host's state (a JSON object text) that the
  // next automatic save keeps; set it before the step() that ends an optimizer step.
  void set_host_state(const std::string& extra_json) {
    strata_error err = detail::make_error();
    detail::check(strata_set_host_state(rt_, extra_json.c_str(), &err), err, "strata_set_host_state");
  }

  // What the checkpoint block's auto_resume loaded at finalize; nothing when it loaded nothing.
  std::optional<LoadResult> resumed() {
    strata_load_result raw{};
    raw.struct_size = sizeof(raw);
    strata_error err = detail::make_error();
    detail::check(strata_resumed(rt_, &raw, &err), err, "strata_resumed");
    if (raw.tag == nullptr) return std::nullopt;
    return LoadResult{raw.tag, raw.extra_json != nullptr ? raw.extra_json : "{}", raw.global_steps,
                      raw.skipped_steps};
  }

  // Uneven data (API 1.12; the manifest's "join": true): this rank has no more micro-batches and
  // takes part in the others' with zero gradients until every rank has joined (strata_join).
  // Returns how many of the others' micro-batches it took part in.
  uint64_t join() {
    uint64_t mirrored = 0;
    strata_error err = detail::make_error();
    detail::check(strata_join(rt_, &mirrored, &err), err, "strata_join");
    return mirrored;
  }

  // The learning rate the next optimizer step uses.
  double lr() const {
    double value = 0.0;
    detail::check(strata_lr(rt_, &value), "strata_lr");
    return value;
  }

  // Overrides the learning rate from the next step on; NaN clears the override (back to the
  // manifest's schedule).
  void set_lr(double lr) {
    strata_error err = detail::make_error();
    detail::check(strata_set_lr(rt_, lr, &err), err, "strata_set_lr");
  }

  // The CUDA stream (a cudaStream_t) the caller enqueues forward and backward on (API 1.7);
  // nullptr: the legacy default stream. Before finalize or between steps.
  void set_stream(void* cuda_stream) {
    strata_error err = detail::make_error();
    detail::check(strata_set_stream(rt_, cuda_stream, &err), err, "strata_set_stream");
  }

  MemoryReport memory() const {
    MemoryReport report{};
    report.struct_size = sizeof(report);
    detail::check(strata_memory(rt_, &report), "strata_memory");
    return report;
  }

 private:
  explicit Runtime(const strata_create_options& options) { create(options); }

  static strata_create_options base_options(const std::string& overrides_json) {
    strata_create_options options{};
    options.struct_size = sizeof(options);
    // c_str() of the caller's string: valid until create() returns, which is all that is needed.
    options.overrides_json = overrides_json.empty() ? nullptr : overrides_json.c_str();
    return options;
  }

  void create(const strata_create_options& options) {
    strata_error err = detail::make_error();
    detail::check(strata_create(&options, &rt_, &err), err, "strata_create");
  }

  void call(strata_status (*fn)(strata_runtime*, strata_error*), const char* name) {
    strata_error err = detail::make_error();
    detail::check(fn(rt_, &err), err, name);
  }

  strata_runtime* rt_ = nullptr;
};

// Scope guard: gathers a group on construction and releases it when the scope ends, so a layer's
// parameters are readable exactly while its forward or backward runs. release() may be called
// earlier to see its error; the destructor cannot throw, so there it reports a failure on stderr
// (at stage 3 a failed release means the ranks' sequences diverged: the next call fails too).
class GatheredGroup {
 public:
  GatheredGroup(Runtime& runtime, uint32_t group, uint32_t flags = 0)
      : runtime_(&runtime), group_(group) {
    runtime_->gather(group_, flags);
  }
  GatheredGroup(const GatheredGroup&) = delete;
  GatheredGroup& operator=(const GatheredGroup&) = delete;
  ~GatheredGroup() {
    if (runtime_ == nullptr) return;
    try {
      release();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "strata: releasing group %u failed: %s\n", group_, e.what());
    }
  }

  // Releases now; afterwards the guard does nothing.
  void release() {
    Runtime* runtime = std::exchange(runtime_, nullptr);
    if (runtime != nullptr) runtime->release(group_);
  }

 private:
  Runtime* runtime_;
  uint32_t group_;
};

}  // namespace strata
