// The host C API (strata.h): argument checks, exception-to-status translation, nothing else.
#include "engine/engine.hpp"
#include "error.hpp"
#include "engine/host_structs.hpp"
#include "log.hpp"

#include <strata/plugin.hpp>
#include <strata/strata.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <string>

struct strata_runtime {
  std::unique_ptr<strata::rt::Engine> engine;
};

namespace {

using strata::rt::HostStruct;
using strata::rt::host_struct_problem;

// An error record smaller than its first released size has no room for a message: the call runs
// as if there were no record.
bool error_record_too_small(const strata_error* err) {
  return err != nullptr && err->struct_size < HostStruct<strata_error>::first_size;
}

void write_error(strata_error* err, strata_status code, const char* message) {
  if (err == nullptr || error_record_too_small(err)) return;
  err->code = code;
  std::strncpy(err->message, message, sizeof(err->message) - 1);
  err->message[sizeof(err->message) - 1] = '\0';
}

// Says once per process (in the log) that an error record was too small to write to.
void note_small_error_record(const strata_error* err) noexcept {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  try {
    strata::rt::logger().warn("{}; the call runs, and its errors are not written to that record",
                              host_struct_problem<strata_error>(err->struct_size, "strata error record"));
  } catch (...) {
  }
}

// Runs `body`; no exception leaves the C API. An error record smaller than its first released size
// is treated as no record: the call runs (a collective call must, or the other ranks wait for this
// one), its errors are returned but not written, and the log says so once.
template <class Body>
strata_status translate(strata_error* err, Body&& body) noexcept {
  if (error_record_too_small(err)) note_small_error_record(err);
  try {
    body();
    return STRATA_OK;
  } catch (const strata::rt::Error& e) {
    write_error(err, e.code(), e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    write_error(err, STRATA_ERR_OUT_OF_MEMORY, "out of memory");
    return STRATA_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    write_error(err, STRATA_ERR_INTERNAL, e.what());
    return STRATA_ERR_INTERNAL;
  } catch (...) {
    write_error(err, STRATA_ERR_INTERNAL, "unknown exception");
    return STRATA_ERR_INTERNAL;
  }
}

strata::rt::Engine& engine_of(strata_runtime* rt, const char* call) {
  if (rt == nullptr || !rt->engine) {
    throw strata::rt::Error(STRATA_ERR_INVALID_ARGUMENT, std::string(call) + ": runtime is NULL");
  }
  return *rt->engine;
}

// STRATA_OK when `out` is non-NULL and at least its first released size; else what to return. A
// too-small struct has no strata_error to go to: the log names it. No exception leaves it.
template <class Out>
strata_status check_out(const Out* out, const char* call) noexcept {
  if (out == nullptr) return STRATA_ERR_INVALID_ARGUMENT;
  if (out->struct_size >= HostStruct<Out>::first_size) return STRATA_OK;
  try {
    strata::rt::logger().error("{}", host_struct_problem<Out>(out->struct_size, call));
  } catch (...) {
  }
  return STRATA_ERR_ABI;
}

// Copies only the part of `full` that fits in the caller's struct_size (older callers; a newer
// caller's fields past this runtime's struct keep what the caller put there).
template <class Out>
void copy_sized(const Out& full, Out* out) {
  const size_t caller = out->struct_size;
  std::memcpy(out, &full, std::min(caller, sizeof(Out)));
  out->struct_size = caller;
}


// strata_world, strata_training, strata_memory: checks, then copies what `get` reads from the
// engine into `out`. No exception leaves it.
template <class Out, class Get>
strata_status report(const strata_runtime* rt, Out* out, const char* call, Get&& get) noexcept {
  if (rt == nullptr || !rt->engine) return STRATA_ERR_INVALID_ARGUMENT;
  if (const strata_status s = check_out(out, call); s != STRATA_OK) return s;
  try {
    copy_sized(get(*rt->engine), out);
    return STRATA_OK;
  } catch (const std::bad_alloc&) {
    return STRATA_ERR_OUT_OF_MEMORY;
  } catch (...) {
    return STRATA_ERR_INTERNAL;
  }
}

}  // namespace

extern "C" {

strata_status strata_create(const strata_create_options* options, strata_runtime** out,
                            strata_error* err) {
  return translate(err, [&] {
    if (options == nullptr || out == nullptr) {
      throw strata::rt::Error(STRATA_ERR_INVALID_ARGUMENT,
                              "strata_create: options and out are required (options.struct_size "
                              "= sizeof(strata_create_options))");
    }
    strata::rt::check_host_struct<strata_create_options>(options->struct_size, "strata_create");
    *out = nullptr;
    const strata_create_options given = strata::rt::read_host_struct(*options);
    auto rt = std::make_unique<strata_runtime>();
    rt->engine = std::make_unique<strata::rt::Engine>(given);
    *out = rt.release();
  });
}

void strata_destroy(strata_runtime* rt) {
  try {
    delete rt;
  } catch (...) {
    // Teardown must not throw across the C boundary; plugins report their own problems.
  }
}

strata_status strata_world(const strata_runtime* rt, strata_world_info* out) {
  return report(rt, out, "strata_world", [](const strata::rt::Engine& e) { return e.world(); });
}

strata_status strata_training(const strata_runtime* rt, strata_training_info* out) {
  return report(rt, out, "strata_training", [](const strata::rt::Engine& e) { return e.training(); });
}

strata_status strata_register_param(strata_runtime* rt, const strata_param_desc* param,
                                    uint32_t* index, strata_error* err) {
  return translate(err, [&] {
    if (param == nullptr) {
      throw strata::rt::Error(STRATA_ERR_INVALID_ARGUMENT, "register_param: param is NULL");
    }
    strata::rt::Engine& engine = engine_of(rt, "register_param");
    strata::rt::check_host_struct<strata_param_desc>(param->struct_size, "register_param");
    const uint32_t i = engine.register_param(strata::rt::read_host_struct(*param));
    if (index != nullptr) *index = i;
  });
}

strata_status strata_finalize(strata_runtime* rt, strata_error* err) {
  return translate(err, [&] { engine_of(rt, "finalize").finalize(); });
}

strata_status strata_grad_ready(strata_runtime* rt, uint32_t index, strata_error* err) {
  return translate(err, [&] { engine_of(rt, "grad_ready").grad_ready(index); });
}

strata_status strata_define_group(strata_runtime* rt, const char* name, const uint32_t* params,
                                  size_t count, uint32_t* group, strata_error* err) {
  return translate(err, [&] {
    const uint32_t id = engine_of(rt, "define_group")
                            .define_group(name != nullptr ? name : "", params, count);
    if (group != nullptr) *group = id;
  });
}

strata_status strata_gather(strata_runtime* rt, uint32_t group, uint32_t flags,
                            strata_error* err) {
  return translate(err, [&] { engine_of(rt, "gather").gather(group, flags); });
}

strata_status strata_release(strata_runtime* rt, uint32_t group, strata_error* err) {
  return translate(err, [&] { engine_of(rt, "release").release(group); });
}

strata_status strata_view_param(strata_runtime* rt, uint32_t index, strata_param_view* out,
                                strata_error* err) {
  return translate(err, [&] {
    strata::rt::Engine& engine = engine_of(rt, "param_view");
    if (out == nullptr) {
      throw strata::rt::Error(STRATA_ERR_INVALID_ARGUMENT, "param_view: out is NULL");
    }
    strata::rt::check_host_struct<strata_param_view>(out->struct_size, "param_view");
    if (!engine.finalized()) {
      throw strata::rt::Error(STRATA_ERR_INVALID_ARGUMENT,
                              "param_view: call strata_finalize first");
    }
    copy_sized(engine.param_view(index), out);
  });
}

strata_status strata_step(strata_runtime* rt, strata_step_result* out, strata_error* err) {
  return translate(err, [&] {
    strata::rt::Engine& engine = engine_of(rt, "step");
    // `out` may be NULL; one too small is refused before the step, which is collective.
    if (out != nullptr) strata::rt::check_host_struct<strata_step_result>(out->struct_size, "step");
    const strata_step_result result = engine.step();
    if (out != nullptr) copy_sized(result, out);
  });
}

strata_status strata_save(strata_runtime* rt, const strata_save_args* args, strata_error* err) {
  return translate(err, [&] {
    strata::rt::Engine& engine = engine_of(rt, "save");
    if (args == nullptr) throw strata::rt::Error(STRATA_ERR_INVALID_ARGUMENT, "save: args is NULL");
    strata::rt::check_host_struct<strata_save_args>(args->struct_size, "save");
    const strata_save_args a = strata::rt::read_host_struct(*args);
    if (a.dir == nullptr) throw strata::rt::Error(STRATA_ERR_INVALID_ARGUMENT, "save: dir is NULL");
    engine.save({a.dir, a.tag != nullptr ? a.tag : "", a.extra_json != nullptr ? a.extra_json : "",
                 a.blocking != 0});
  });
}

strata_status strata_save_wait(strata_runtime* rt, strata_error* err) {
  return translate(err, [&] { engine_of(rt, "save_wait").save_wait(); });
}

strata_status strata_load(strata_runtime* rt, const strata_load_args* args,
                          strata_load_result* out, strata_error* err) {
  return translate(err, [&] {
    strata::rt::Engine& engine = engine_of(rt, "load");
    if (args == nullptr) throw strata::rt::Error(STRATA_ERR_INVALID_ARGUMENT, "load: args is NULL");
    strata::rt::check_host_struct<strata_load_args>(args->struct_size, "load");
    if (out != nullptr) strata::rt::check_host_struct<strata_load_result>(out->struct_size, "load");
    const strata_load_args a = strata::rt::read_host_struct(*args);
    if (a.dir == nullptr) throw strata::rt::Error(STRATA_ERR_INVALID_ARGUMENT, "load: dir is NULL");
    const strata::rt::Engine::Loaded& loaded = engine.load(a.dir, a.tag != nullptr ? a.tag : "");
    if (out == nullptr) return;
    strata_load_result result{};
    result.struct_size = sizeof(result);
    result.tag = loaded.tag.c_str();
    result.extra_json = loaded.extra_json.c_str();
    result.global_steps = loaded.global_steps;
    result.skipped_steps = loaded.skipped_steps;
    copy_sized(result, out);
  });
}

strata_status strata_set_host_state(strata_runtime* rt, const char* extra_json, strata_error* err) {
  return translate(err, [&] {
    strata::rt::Engine& engine = engine_of(rt, "set_host_state");
    if (extra_json == nullptr) {
      throw strata::rt::Error(STRATA_ERR_INVALID_ARGUMENT, "set_host_state: extra_json is NULL");
    }
    engine.set_host_state(extra_json);
  });
}

strata_status strata_join(strata_runtime* rt, uint64_t* mirrored, strata_error* err) {
  return translate(err, [&] {
    const uint64_t count = engine_of(rt, "join").join();
    if (mirrored != nullptr) *mirrored = count;
  });
}

strata_status strata_resumed(strata_runtime* rt, strata_load_result* out, strata_error* err) {
  return translate(err, [&] {
    strata::rt::Engine& engine = engine_of(rt, "resumed");
    if (out == nullptr) throw strata::rt::Error(STRATA_ERR_INVALID_ARGUMENT, "resumed: out is NULL");
    strata::rt::check_host_struct<strata_load_result>(out->struct_size, "resumed");
    strata_load_result result{};
    result.struct_size = sizeof(result);
    if (const strata::rt::Engine::Loaded* loaded = engine.resumed()) {
      result.tag = loaded->tag.c_str();
      result.extra_json = loaded->extra_json.c_str();
      result.global_steps = loaded->global_steps;
      result.skipped_steps = loaded->skipped_steps;
    }
    copy_sized(result, out);
  });
}

strata_status strata_lr(const strata_runtime* rt, double* lr) {
  if (rt == nullptr || !rt->engine || lr == nullptr) return STRATA_ERR_INVALID_ARGUMENT;
  return translate(nullptr, [&] { *lr = rt->engine->lr(); });
}

strata_status strata_set_lr(strata_runtime* rt, double lr, strata_error* err) {
  return translate(err, [&] { engine_of(rt, "set_lr").set_lr(lr); });
}

strata_status strata_set_stream(strata_runtime* rt, void* cuda_stream, strata_error* err) {
  return translate(err, [&] { engine_of(rt, "set_stream").set_stream(cuda_stream); });
}

strata_status strata_loss_scale(const strata_runtime* rt, double* scale) {
  if (rt == nullptr || !rt->engine || scale == nullptr) return STRATA_ERR_INVALID_ARGUMENT;
  return translate(nullptr, [&] { *scale = rt->engine->loss_scale(); });
}

strata_status strata_allreduce(strata_runtime* rt, const void* send, void* recv, uint64_t count,
                               int32_t dtype, int32_t op, strata_error* err) {
  return translate(err, [&] {
    engine_of(rt, "allreduce").host_allreduce(send, recv, count, dtype, op);
  });
}

strata_status strata_allgather(strata_runtime* rt, const void* send, void* recv,
                               uint64_t count_per_rank, int32_t dtype, strata_error* err) {
  return translate(err, [&] {
    engine_of(rt, "allgather").host_allgather(send, recv, count_per_rank, dtype);
  });
}

strata_status strata_broadcast(strata_runtime* rt, void* buf, uint64_t count, int32_t dtype,
                               int32_t root, strata_error* err) {
  return translate(err, [&] {
    engine_of(rt, "broadcast").host_broadcast(buf, count, dtype, root);
  });
}

strata_status strata_barrier(strata_runtime* rt, strata_error* err) {
  return translate(err, [&] { engine_of(rt, "barrier").host_barrier(); });
}

}  // extern "C"

// Outside extern "C": C++ helpers (group_of returns a reference, which C linkage cannot express).
namespace {

// A strata_group handle is the address of the engine's HostGroup (the struct is never defined).
strata::rt::HostGroup* host_group(const strata_group* group) {
  return reinterpret_cast<strata::rt::HostGroup*>(const_cast<strata_group*>(group));
}

strata::rt::HostGroup& group_of(strata_group* group, const char* call) {
  if (group == nullptr) {
    throw strata::rt::Error(STRATA_ERR_INVALID_ARGUMENT, std::string(call) + ": group is NULL");
  }
  return *host_group(group);
}

}  // namespace

extern "C" {

strata_status strata_group_create(strata_runtime* rt, int32_t color, int32_t key,
                                  strata_group** out, strata_error* err) {
  return translate(err, [&] {
    if (out == nullptr) {
      throw strata::rt::Error(STRATA_ERR_INVALID_ARGUMENT, "strata_group_create: out is NULL");
    }
    *out = nullptr;
    *out = reinterpret_cast<strata_group*>(
        engine_of(rt, "strata_group_create").create_group(color, key));
  });
}

strata_status strata_group_rank(const strata_group* group, int32_t* rank, int32_t* size) {
  if (group == nullptr) return STRATA_ERR_INVALID_ARGUMENT;
  if (rank != nullptr) *rank = host_group(group)->rank();
  if (size != nullptr) *size = host_group(group)->size();
  return STRATA_OK;
}

strata_status strata_group_allreduce(strata_group* group, const void* send, void* recv,
                                     uint64_t count, int32_t dtype, int32_t op,
                                     strata_error* err) {
  return translate(err, [&] {
    group_of(group, "strata_group_allreduce").collectives().allreduce(send, recv, count, dtype, op);
  });
}

strata_status strata_group_allgather(strata_group* group, const void* send, void* recv,
                                     uint64_t count_per_rank, int32_t dtype, strata_error* err) {
  return translate(err, [&] {
    group_of(group, "strata_group_allgather").collectives().allgather(send, recv, count_per_rank,
                                                                       dtype);
  });
}

strata_status strata_group_broadcast(strata_group* group, void* buf, uint64_t count,
                                     int32_t dtype, int32_t root, strata_error* err) {
  return translate(err, [&] {
    group_of(group, "strata_group_broadcast").collectives().broadcast(buf, count, dtype, root);
  });
}

strata_status strata_group_barrier(strata_group* group, strata_error* err) {
  return translate(err, [&] { group_of(group, "strata_group_barrier").collectives().barrier(); });
}

strata_status strata_group_alltoallv(strata_group* group, const void* send,
                                     const uint64_t* send_counts, const uint64_t* send_displs,
                                     void* recv, const uint64_t* recv_counts,
                                     const uint64_t* recv_displs, int32_t dtype,
                                     strata_error* err) {
  return translate(err, [&] {
    group_of(group, "strata_group_alltoallv")
        .alltoallv(send, send_counts, send_displs, recv, recv_counts, recv_displs, dtype);
  });
}

strata_status strata_group_destroy(strata_runtime* rt, strata_group* group, strata_error* err) {
  return translate(err, [&] {
    if (group == nullptr) return;
    engine_of(rt, "strata_group_destroy").destroy_group(host_group(group));
  });
}

strata_status strata_memory(const strata_runtime* rt, strata_memory_report* out) {
  return report(rt, out, "strata_memory", [](const strata::rt::Engine& e) { return e.memory(); });
}

const char* strata_status_name(int32_t status) {
  switch (status) {
    case STRATA_OK: return "ok";
    case STRATA_ERR_INVALID_ARGUMENT: return "invalid argument";
    case STRATA_ERR_UNSUPPORTED: return "unsupported";
    case STRATA_ERR_OUT_OF_MEMORY: return "out of memory";
    case STRATA_ERR_COMM: return "communication error";
    case STRATA_ERR_MISMATCH: return "ranks disagree";
    case STRATA_ERR_NUMERIC: return "numeric error";
    case STRATA_ERR_INTERNAL: return "internal error";
    case STRATA_ERR_ABI: return "ABI mismatch";
    default: return "unknown status";
  }
}

const char* strata_version(void) { return STRATA_VERSION_TEXT; }

uint32_t strata_api_version(void) {
  return STRATA_API_VERSION_OF(STRATA_API_VERSION_MAJOR, STRATA_API_VERSION_MINOR);
}

const char* strata_dtype_name(int32_t dtype) { return strata::sdk::dtype_name(dtype); }

}  // extern "C"
