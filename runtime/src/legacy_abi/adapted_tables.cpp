// The current-layout tables that forward to legacy plugins (see legacy_plugin.hpp): arguments
// renamed, args structs unpacked, shard arrays converted to the plugin's stride.
#include "legacy_plugin.hpp"

#include "adapter_support.hpp"
#include "names.hpp"

#include <string_view>

namespace strata::rt::legacy {
namespace {

// Runs `body(instance)` for an adapter function: checks self, catches everything.
template <class Body>
strata_status with(void* self, strata_error* err, const char* fn, Body&& body) noexcept {
  return guard(err, [&]() -> strata_status {
    if (self == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, std::string(fn) + ": self is NULL");
    Instance& in = *static_cast<Instance*>(self);
    // owned_shards arrays stay valid until a call other than owned_shards.
    if (std::string_view(fn) != "owned_shards") in.shards_out_earlier.clear();
    return body(in);
  });
}

[[noreturn]] void unsupported(const Instance& in, const char* fn) {
  fail(STRATA_ERR_UNSUPPORTED, "legacy " + plugin_kind_name(in.kind) + " plugin (ABI 1." +
                                   std::to_string(in.minor) + ") has no " + fn);
}

strata_status adapter_create(const strata_plugin_create_args*, void** self, strata_error* err) {
  if (self != nullptr) *self = nullptr;
  return set_error(err, STRATA_ERR_INTERNAL,
                   "legacy plugin adapter: create is not called through the adapter table; the "
                   "runtime creates legacy plugins with strata::rt::legacy::create");
}

void adapter_destroy(void* self) {
  auto* in = static_cast<Instance*>(self);
  if (in == nullptr) return;
  if (in->self != nullptr) lifecycle(in->kind, in->ops).destroy(in->self);
  delete in;
}

// Today's shards as the plugin reads them: in a 1.0/1.1 plugin's stride (the same master/grad
// pointers), or as they are for a 1.2 plugin (1.2's shard is today's).
const v1_2::strata_shard* shards_for_legacy(Instance& in, const strata_shard* shards,
                                            size_t count) {
  if (!shards_are_1_0(in.minor) || shards == nullptr) return as_legacy(shards);
  in.shards_in.resize(count);
  for (size_t i = 0; i < count; ++i) in.shards_in[i] = shard_1_0(shards[i]);
  // The plugin reads the array as its own strata_shard: the 1.0 layout, which Shard1_0 is.
  return reinterpret_cast<const v1_2::strata_shard*>(in.shards_in.data());
}

bool same_shards(const std::vector<strata_shard>& a, const std::vector<strata_shard>& b) {
  auto same = [](const strata_shard& x, const strata_shard& y) {
    return x.struct_size == y.struct_size && x.param_index == y.param_index && x.offset == y.offset &&
           x.count == y.count && x.master == y.master && x.grad == y.grad && x.model == y.model &&
           x.model_dtype == y.model_dtype;
  };
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), same);
}

// ---- comm: current layout -> legacy ---------------------------------------------------------

struct Coll {
  const strata_buffer* send = nullptr;
  const strata_buffer* recv = nullptr;
  int32_t op = STRATA_SUM;
  int32_t root = 0;
  const uint64_t* recv_counts = nullptr;
  const uint64_t* displs = nullptr;
};

Coll read_coll(const strata_coll_args* a, const char* fn) {
  if (a == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, std::string(fn) + ": args is NULL");
  Coll c;
  if (STRATA_STRUCT_HAS(a, strata_coll_args, send)) c.send = a->send;
  if (STRATA_STRUCT_HAS(a, strata_coll_args, recv)) c.recv = a->recv;
  if (STRATA_STRUCT_HAS(a, strata_coll_args, op)) c.op = a->op;
  if (STRATA_STRUCT_HAS(a, strata_coll_args, root)) c.root = a->root;
  if (STRATA_STRUCT_HAS(a, strata_coll_args, recv_counts)) c.recv_counts = a->recv_counts;
  if (STRATA_STRUCT_HAS(a, strata_coll_args, displs)) c.displs = a->displs;
  return c;
}

const v1_2::strata_comm_ops& comm_of(const Instance& in) {
  return legacy_table<v1_2::strata_comm_ops>(in);
}

strata_status comm_query(void* self, strata_comm_caps* caps, strata_error* err) {
  return with(self, err, "query",
              [&](Instance& in) { return call(comm_of(in).query, in.self, caps, err); });
}
strata_status comm_allreduce(void* self, const strata_coll_args* args, strata_request* req,
                             strata_error* err) {
  return with(self, err, "allreduce", [&](Instance& in) {
    const Coll c = read_coll(args, "allreduce");
    return call(comm_of(in).allreduce, in.self, c.send, c.recv, c.op, req, err);
  });
}
strata_status comm_allgather(void* self, const strata_coll_args* args, strata_request* req,
                             strata_error* err) {
  return with(self, err, "allgather", [&](Instance& in) {
    const Coll c = read_coll(args, "allgather");
    return call(comm_of(in).allgather, in.self, c.send, c.recv, req, err);
  });
}
strata_status comm_allgatherv(void* self, const strata_coll_args* args, strata_request* req,
                              strata_error* err) {
  return with(self, err, "allgatherv", [&](Instance& in) {
    if (comm_of(in).allgatherv == nullptr) unsupported(in, "allgatherv");
    const Coll c = read_coll(args, "allgatherv");
    return call(comm_of(in).allgatherv, in.self, c.send, c.recv, c.recv_counts, c.displs, req, err);
  });
}
strata_status comm_reduce_scatter(void* self, const strata_coll_args* args, strata_request* req,
                                  strata_error* err) {
  return with(self, err, "reduce_scatter", [&](Instance& in) {
    if (comm_of(in).reduce_scatter == nullptr) unsupported(in, "reduce_scatter");
    const Coll c = read_coll(args, "reduce_scatter");
    return call(comm_of(in).reduce_scatter, in.self, c.send, c.recv, c.op, req, err);
  });
}
strata_status comm_broadcast(void* self, const strata_coll_args* args, strata_request* req,
                             strata_error* err) {
  return with(self, err, "broadcast", [&](Instance& in) {
    const Coll c = read_coll(args, "broadcast");
    // In place on recv (ABI 1.3); a caller that named only send means the same buffer.
    const strata_buffer* buf = c.recv != nullptr ? c.recv : c.send;
    return call(comm_of(in).broadcast, in.self, buf, c.root, req, err);
  });
}
strata_status comm_barrier(void* self, const strata_coll_args* args, strata_request* req,
                           strata_error* err) {
  return with(self, err, "barrier", [&](Instance& in) {
    if (args == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, "barrier: args is NULL");
    return call(comm_of(in).barrier, in.self, req, err);
  });
}
strata_status comm_wait(void* self, strata_request req, strata_error* err) {
  return with(self, err, "wait", [&](Instance& in) {
    if (comm_of(in).wait == nullptr) unsupported(in, "wait");
    return call(comm_of(in).wait, in.self, req, err);
  });
}
strata_status comm_test(void* self, strata_request req, int32_t* done, strata_error* err) {
  return with(self, err, "test", [&](Instance& in) {
    if (comm_of(in).test == nullptr) unsupported(in, "test");
    return call(comm_of(in).test, in.self, req, done, err);
  });
}

// ---- sharding: current layout -> legacy -----------------------------------------------------

const v1_2::strata_sharding_ops& sharding_of(const Instance& in) {
  return legacy_table<v1_2::strata_sharding_ops>(in);
}

const v1_2::strata_sharding_ops& groups_of(const Instance& in, const char* fn) {
  if (!sharding_has_groups(sharding_of(in), in.ops_size)) unsupported(in, fn);
  return sharding_of(in);
}

strata_status sharding_query(void* self, strata_sharding_caps* caps, strata_error* err) {
  return with(self, err, "query",
              [&](Instance& in) { return call(sharding_of(in).query, in.self, caps, err); });
}
strata_status sharding_register_param(void* self, uint32_t index, const strata_param_desc* param,
                                      strata_error* err) {
  return with(self, err, "register_param", [&](Instance& in) {
    return call(sharding_of(in).register_param, in.self, index, param, err);
  });
}
strata_status sharding_finalize(void* self, strata_error* err) {
  return with(self, err, "finalize",
              [&](Instance& in) { return call(sharding_of(in).finalize, in.self, err); });
}
strata_status sharding_grad_ready(void* self, const strata_grad_ready_args* args, strata_error* err) {
  return with(self, err, "grad_ready", [&](Instance& in) {
    if (args == nullptr || !STRATA_STRUCT_HAS(args, strata_grad_ready_args, param_index)) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "grad_ready: args is NULL or too small to hold param_index");
    }
    const int32_t boundary = STRATA_STRUCT_HAS(args, strata_grad_ready_args, boundary) ? args->boundary : 0;
    return call(sharding_of(in).grad_ready, in.self, args->param_index, boundary, err);
  });
}
strata_status sharding_finish_reduce(void* self, strata_error* err) {
  return with(self, err, "finish_reduce",
              [&](Instance& in) { return call(sharding_of(in).finish_reduce, in.self, err); });
}
strata_status sharding_owned_shards(void* self, const strata_shard** shards, size_t* count,
                                    strata_error* err) {
  return with(self, err, "owned_shards", [&](Instance& in) {
    if (shards == nullptr || count == nullptr) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "owned_shards: shards or count is NULL");
    }
    const v1_2::strata_shard* theirs = nullptr;
    size_t n = 0;
    const strata_status status = call(sharding_of(in).owned_shards, in.self, &theirs, &n, err);
    if (status != STRATA_OK) return status;
    const strata_shard* today = as_today(theirs);
    if (shards_are_1_0(in.minor) && n > 0) {
      if (theirs == nullptr) {
        fail(STRATA_ERR_INTERNAL, "owned_shards: legacy sharding plugin returned NULL with count " +
                                      std::to_string(n));
      }
      // The array returned last stays valid across this call: the same shards are the same array;
      // other shards get a new one, and the last is kept until a call other than owned_shards.
      std::vector<strata_shard> now = shards_from_1_0(theirs, n);
      if (!same_shards(now, in.shards_out)) {
        if (!in.shards_out.empty()) in.shards_out_earlier.push_back(std::move(in.shards_out));
        in.shards_out = std::move(now);
      }
      today = in.shards_out.data();
    }
    *shards = today;
    *count = n;
    return STRATA_OK;
  });
}
strata_status sharding_publish(void* self, strata_error* err) {
  return with(self, err, "publish",
              [&](Instance& in) { return call(sharding_of(in).publish, in.self, err); });
}
strata_status sharding_zero_grad(void* self, strata_error* err) {
  return with(self, err, "zero_grad",
              [&](Instance& in) { return call(sharding_of(in).zero_grad, in.self, err); });
}
strata_status sharding_define_group(void* self, uint32_t group, const char* name,
                                    const uint32_t* params, size_t count, strata_error* err) {
  return with(self, err, "define_group", [&](Instance& in) {
    const auto& t = groups_of(in, "define_group");
    return call(t.define_group, in.self, group, name, params, count, err);
  });
}
strata_status sharding_gather(void* self, const strata_group_args* args, strata_error* err) {
  return with(self, err, "gather", [&](Instance& in) {
    const auto& t = groups_of(in, "gather");
    if (args == nullptr || !STRATA_STRUCT_HAS(args, strata_group_args, group)) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "gather: args is NULL or too small to hold group");
    }
    const uint32_t flags = STRATA_STRUCT_HAS(args, strata_group_args, flags) ? args->flags : 0u;
    return call(t.gather, in.self, args->group, flags, err);
  });
}
strata_status sharding_release(void* self, const strata_group_args* args, strata_error* err) {
  return with(self, err, "release", [&](Instance& in) {
    const auto& t = groups_of(in, "release");
    if (args == nullptr || !STRATA_STRUCT_HAS(args, strata_group_args, group)) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "release: args is NULL or too small to hold group");
    }
    return call(t.release, in.self, args->group, err);
  });
}
strata_status sharding_param_view(void* self, uint32_t index, strata_param_view* view,
                                  strata_error* err) {
  return with(self, err, "param_view", [&](Instance& in) {
    return call(groups_of(in, "param_view").param_view, in.self, index, view, err);
  });
}
strata_status sharding_end_micro_step(void* self, const strata_micro_step_args* args,
                                      strata_error* err) {
  return with(self, err, "end_micro_step", [&](Instance& in) {
    const auto& t = groups_of(in, "end_micro_step");
    if (args == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, "end_micro_step: args is NULL");
    const int32_t boundary = STRATA_STRUCT_HAS(args, strata_micro_step_args, boundary) ? args->boundary : 0;
    return call(t.end_micro_step, in.self, boundary, err);
  });
}

// ---- precision: current layout -> legacy ----------------------------------------------------

const v1_2::strata_precision_ops& precision_of(const Instance& in) {
  return legacy_table<v1_2::strata_precision_ops>(in);
}

strata_status precision_query(void* self, strata_precision_caps* caps, strata_error* err) {
  return with(self, err, "query",
              [&](Instance& in) { return call(precision_of(in).query, in.self, caps, err); });
}
strata_status precision_loss_scale(void* self, double* scale, strata_error* err) {
  return with(self, err, "loss_scale",
              [&](Instance& in) { return call(precision_of(in).loss_scale, in.self, scale, err); });
}
strata_status precision_grad_stats(void* self, const strata_shard* shards, size_t count,
                                   strata_grad_stats* stats, strata_error* err) {
  return with(self, err, "grad_stats", [&](Instance& in) {
    const v1_2::strata_shard* theirs = shards_for_legacy(in, shards, count);
    return call(precision_of(in).grad_stats, in.self, theirs, count, stats, err);
  });
}
strata_status precision_update(void* self, int32_t overflow, strata_error* err) {
  return with(self, err, "update",
              [&](Instance& in) { return call(precision_of(in).update, in.self, overflow, err); });
}
strata_status precision_cast(void* self, const strata_buffer* src, const strata_buffer* dst,
                             strata_error* err) {
  // Thread-safe as the plugin's cast is: touches nothing of the wrapper but the pointers.
  return with(self, err, "cast",
              [&](Instance& in) { return call(precision_of(in).cast, in.self, src, dst, err); });
}

// ---- offload: current layout -> legacy ------------------------------------------------------

const v1_2::strata_offload_ops& offload_of(const Instance& in) {
  return legacy_table<v1_2::strata_offload_ops>(in);
}

strata_status offload_query(void* self, strata_offload_caps* caps, strata_error* err) {
  return with(self, err, "query", [&](Instance& in) {
    // 0 unless the plugin says otherwise: a 1.0/1.1 plugin knows nothing of model copies, and a
    // 1.2 plugin that does not write them may leave the field alone. The runtime then makes them.
    if (caps != nullptr && STRATA_STRUCT_HAS(caps, strata_offload_caps, writes_model_copy)) {
      caps->writes_model_copy = 0;
    }
    return call(offload_of(in).query, in.self, caps, err);
  });
}
strata_status offload_init_state(void* self, const strata_shard* shards, size_t count,
                                 strata_error* err) {
  return with(self, err, "init_state", [&](Instance& in) {
    const v1_2::strata_shard* theirs = shards_for_legacy(in, shards, count);
    return call(offload_of(in).init_state, in.self, theirs, count, err);
  });
}
strata_status offload_step(void* self, const strata_shard* shards, size_t count,
                           const strata_step_args* args, strata_error* err) {
  return with(self, err, "step", [&](Instance& in) {
    const v1_2::strata_shard* theirs = shards_for_legacy(in, shards, count);
    return call(offload_of(in).step, in.self, theirs, count, args, err);
  });
}

// ---- the adapter tables ------------------------------------------------------------------------

constexpr strata_comm_ops kCommAdapter = {
    sdk::ops_header<strata_comm_ops>(),
    adapter_create,
    adapter_destroy,
    comm_query,
    comm_allreduce,
    comm_allgather,
    comm_allgatherv,
    comm_reduce_scatter,
    comm_broadcast,
    comm_barrier,
    comm_wait,
    comm_test,
    nullptr,   // alltoallv: ABI 1.10, which no legacy plugin has
    nullptr};  // split: likewise

constexpr strata_sharding_ops kShardingAdapter = {
    sdk::ops_header<strata_sharding_ops>(),
    adapter_create,
    adapter_destroy,
    sharding_query,
    sharding_register_param,
    sharding_finalize,
    sharding_grad_ready,
    sharding_finish_reduce,
    sharding_owned_shards,
    sharding_publish,
    sharding_zero_grad,
    sharding_define_group,
    sharding_gather,
    sharding_release,
    sharding_param_view,
    sharding_end_micro_step,
    nullptr};  // shard_ranges: ABI 1.8

constexpr strata_precision_ops kPrecisionAdapter = {
    sdk::ops_header<strata_precision_ops>(),
    adapter_create,
    adapter_destroy,
    precision_query,
    precision_loss_scale,
    precision_grad_stats,
    precision_update,
    precision_cast,
    nullptr,  // save_state: 1.0-1.2 plugins have no checkpoint state
    nullptr};

constexpr strata_offload_ops kOffloadAdapter = {
    sdk::ops_header<strata_offload_ops>(),
    adapter_create,
    adapter_destroy,
    offload_query,
    offload_init_state,
    offload_step,
    nullptr,  // state_slots, read_state, write_state, save_state, load_state: ABI 1.6
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,  // param_store_open, _start, _wait: ABI 1.8
    nullptr,
    nullptr};

}  // namespace

template <>
const strata_comm_ops& adapter_ops<strata_comm_ops>() {
  return kCommAdapter;
}
template <>
const strata_sharding_ops& adapter_ops<strata_sharding_ops>() {
  return kShardingAdapter;
}
template <>
const strata_precision_ops& adapter_ops<strata_precision_ops>() {
  return kPrecisionAdapter;
}
template <>
const strata_offload_ops& adapter_ops<strata_offload_ops>() {
  return kOffloadAdapter;
}

template <>
strata_comm_ops adapter_ops_for<strata_comm_ops>(const strata_plugin_descriptor& d) {
  strata_comm_ops ops = kCommAdapter;
  const auto& t = *static_cast<const v1_2::strata_comm_ops*>(d.ops);
  if (t.allgatherv == nullptr) ops.allgatherv = nullptr;
  if (t.reduce_scatter == nullptr) ops.reduce_scatter = nullptr;
  if (t.wait == nullptr) ops.wait = nullptr;
  if (t.test == nullptr) ops.test = nullptr;
  return ops;
}
template <>
strata_sharding_ops adapter_ops_for<strata_sharding_ops>(const strata_plugin_descriptor& d) {
  strata_sharding_ops ops = kShardingAdapter;
  if (!sharding_has_groups(*static_cast<const v1_2::strata_sharding_ops*>(d.ops), table_size(d))) {
    ops.define_group = nullptr;
    ops.gather = nullptr;
    ops.release = nullptr;
    ops.param_view = nullptr;
    ops.end_micro_step = nullptr;
  }
  return ops;
}
template <>
strata_precision_ops adapter_ops_for<strata_precision_ops>(const strata_plugin_descriptor&) {
  return kPrecisionAdapter;
}
template <>
strata_offload_ops adapter_ops_for<strata_offload_ops>(const strata_plugin_descriptor&) {
  return kOffloadAdapter;
}

}  // namespace strata::rt::legacy
