// The 1.0-1.2 plugin adapter (see legacy_plugin.hpp): table checks, the current-layout tables that
// forward to legacy plugins, and the 1.2-layout tables that let legacy plugins call the current
// comm and precision instances lent to them.
#include "legacy_plugin.hpp"

#include "abi_1_2.hpp"
#include "error.hpp"
#include "names.hpp"

#include <strata/plugin.hpp>

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::rt::legacy {
namespace {

// ---- errors: nothing but a status and a message crosses ------------------------------------

using sdk::fail;
using sdk::set_error;

// sdk::guard for a body that returns the status to pass on.
template <class Body>
strata_status guard(strata_error* err, Body&& body) noexcept {
  strata_status status = STRATA_OK;
  const strata_status thrown = sdk::guard(err, [&] { status = body(); });
  return thrown != STRATA_OK ? thrown : status;
}

// ---- the wrapper every adapted instance is ------------------------------------------------

// Self of a 1.2-layout table lent to a legacy plugin: the current instance it forwards to, and the
// minor of the plugin calling through it (the layout of the shard arrays it passes).
struct Link {
  const void* ops = nullptr;  // const strata_comm_ops* or const strata_precision_ops*
  void* self = nullptr;
  uint32_t caller_minor = 0;
};

struct Instance {
  int32_t kind = 0;
  uint32_t minor = 0;       // the plugin's descriptor abi_minor: the header it was built with
  const void* ops = nullptr;  // the legacy table (a v1_2::*_ops prefix of struct_size bytes)
  size_t ops_size = 0;
  void* self = nullptr;     // the legacy instance

  // The host table the legacy plugin holds, and the 1.2-layout comm/precision tables it points to.
  strata_host_api host{};
  v1_2::comm_ops host_comm{};
  v1_2::precision_ops host_precision{};
  Link comm_link;
  Link precision_link;

  // Shard arrays converted between strides; reused so pointers stay put while sizes do.
  std::vector<v1_2::shard_1_0> shards_in;  // to a 1.0/1.1 offload or precision plugin
  std::vector<strata_shard> shards_out;    // from a 1.0/1.1 sharding plugin
  // Arrays owned_shards returned before shards_out, when a later owned_shards call gave other
  // shards: each stays valid until the next call other than owned_shards (as the header promises).
  std::vector<std::vector<strata_shard>> shards_out_earlier;
};

bool shards_are_1_0(uint32_t minor) { return minor < v1_2::kShardModelMinor; }

template <class Table>
const Table& legacy_table(const Instance& in) {
  return *static_cast<const Table*>(in.ops);
}

// Is the field at `offset` (a function pointer) inside a table of `size` bytes?
constexpr bool has_field(size_t size, size_t offset) { return size >= offset + sizeof(void*); }

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
  if (in->self != nullptr) legacy_table<v1_2::common_ops>(*in).destroy(in->self);
  delete in;
}

// Today's shards -> a 1.0/1.1 plugin's stride (same master/grad pointers).
const strata_shard* shards_for_legacy(Instance& in, const strata_shard* shards, size_t count) {
  if (!shards_are_1_0(in.minor) || shards == nullptr) return shards;
  in.shards_in.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const strata_shard& s = shards[i];
    in.shards_in[i] = v1_2::shard_1_0{sizeof(v1_2::shard_1_0), s.param_index, s.offset, s.count,
                                      s.master, s.grad};
  }
  // The plugin reads the array as its own strata_shard: the 1.0 layout, which shard_1_0 is.
  return reinterpret_cast<const strata_shard*>(in.shards_in.data());
}

// A caller's shard array in its stride -> today's layout (model NULL: no copies asked for).
std::vector<strata_shard> shards_from_1_0(const strata_shard* shards, size_t count) {
  const auto* old = reinterpret_cast<const v1_2::shard_1_0*>(shards);
  std::vector<strata_shard> out(count);
  for (size_t i = 0; i < count; ++i) {
    out[i] = strata_shard{sizeof(strata_shard), old[i].param_index, old[i].offset, old[i].count,
                          old[i].master, old[i].grad, nullptr, STRATA_F32};
  }
  return out;
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

const v1_2::comm_ops& comm_of(const Instance& in) { return legacy_table<v1_2::comm_ops>(in); }

strata_status comm_query(void* self, strata_comm_caps* caps, strata_error* err) {
  return with(self, err, "query", [&](Instance& in) { return comm_of(in).query(in.self, caps, err); });
}
strata_status comm_allreduce(void* self, const strata_coll_args* args, strata_request* req,
                             strata_error* err) {
  return with(self, err, "allreduce", [&](Instance& in) {
    const Coll c = read_coll(args, "allreduce");
    return comm_of(in).allreduce(in.self, c.send, c.recv, c.op, req, err);
  });
}
strata_status comm_allgather(void* self, const strata_coll_args* args, strata_request* req,
                             strata_error* err) {
  return with(self, err, "allgather", [&](Instance& in) {
    const Coll c = read_coll(args, "allgather");
    return comm_of(in).allgather(in.self, c.send, c.recv, req, err);
  });
}
strata_status comm_allgatherv(void* self, const strata_coll_args* args, strata_request* req,
                              strata_error* err) {
  return with(self, err, "allgatherv", [&](Instance& in) {
    if (comm_of(in).allgatherv == nullptr) unsupported(in, "allgatherv");
    const Coll c = read_coll(args, "allgatherv");
    return comm_of(in).allgatherv(in.self, c.send, c.recv, c.recv_counts, c.displs, req, err);
  });
}
strata_status comm_reduce_scatter(void* self, const strata_coll_args* args, strata_request* req,
                                  strata_error* err) {
  return with(self, err, "reduce_scatter", [&](Instance& in) {
    if (comm_of(in).reduce_scatter == nullptr) unsupported(in, "reduce_scatter");
    const Coll c = read_coll(args, "reduce_scatter");
    return comm_of(in).reduce_scatter(in.self, c.send, c.recv, c.op, req, err);
  });
}
strata_status comm_broadcast(void* self, const strata_coll_args* args, strata_request* req,
                             strata_error* err) {
  return with(self, err, "broadcast", [&](Instance& in) {
    const Coll c = read_coll(args, "broadcast");
    // In place on recv (ABI 1.3); a caller that named only send means the same buffer.
    return comm_of(in).broadcast(in.self, c.recv != nullptr ? c.recv : c.send, c.root, req, err);
  });
}
strata_status comm_barrier(void* self, const strata_coll_args* args, strata_request* req,
                           strata_error* err) {
  return with(self, err, "barrier", [&](Instance& in) {
    if (args == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, "barrier: args is NULL");
    return comm_of(in).barrier(in.self, req, err);
  });
}
strata_status comm_wait(void* self, strata_request req, strata_error* err) {
  return with(self, err, "wait", [&](Instance& in) {
    if (comm_of(in).wait == nullptr) unsupported(in, "wait");
    return comm_of(in).wait(in.self, req, err);
  });
}
strata_status comm_test(void* self, strata_request req, int32_t* done, strata_error* err) {
  return with(self, err, "test", [&](Instance& in) {
    if (comm_of(in).test == nullptr) unsupported(in, "test");
    return comm_of(in).test(in.self, req, done, err);
  });
}

// ---- sharding: current layout -> legacy -----------------------------------------------------

const v1_2::sharding_ops& sharding_of(const Instance& in) { return legacy_table<v1_2::sharding_ops>(in); }

// The 1.1 group functions, all five inside the table and non-NULL (check_table refused a table
// with some of them only).
bool sharding_has_groups(const v1_2::sharding_ops& t, size_t size) {
  return size >= v1_2::kShardingSize1_1 && t.define_group != nullptr && t.gather != nullptr &&
         t.release != nullptr && t.param_view != nullptr && t.end_micro_step != nullptr;
}

const v1_2::sharding_ops& groups_of(const Instance& in, const char* fn) {
  if (!sharding_has_groups(sharding_of(in), in.ops_size)) unsupported(in, fn);
  return sharding_of(in);
}

strata_status sharding_query(void* self, strata_sharding_caps* caps, strata_error* err) {
  return with(self, err, "query", [&](Instance& in) { return sharding_of(in).query(in.self, caps, err); });
}
strata_status sharding_register_param(void* self, uint32_t index, const strata_param_desc* param,
                                      strata_error* err) {
  return with(self, err, "register_param", [&](Instance& in) {
    return sharding_of(in).register_param(in.self, index, param, err);
  });
}
strata_status sharding_finalize(void* self, strata_error* err) {
  return with(self, err, "finalize", [&](Instance& in) { return sharding_of(in).finalize(in.self, err); });
}
strata_status sharding_grad_ready(void* self, const strata_grad_ready_args* args, strata_error* err) {
  return with(self, err, "grad_ready", [&](Instance& in) {
    if (args == nullptr || !STRATA_STRUCT_HAS(args, strata_grad_ready_args, param_index)) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "grad_ready: args is NULL or too small to hold param_index");
    }
    const int32_t boundary = STRATA_STRUCT_HAS(args, strata_grad_ready_args, boundary) ? args->boundary : 0;
    return sharding_of(in).grad_ready(in.self, args->param_index, boundary, err);
  });
}
strata_status sharding_finish_reduce(void* self, strata_error* err) {
  return with(self, err, "finish_reduce",
              [&](Instance& in) { return sharding_of(in).finish_reduce(in.self, err); });
}
strata_status sharding_owned_shards(void* self, const strata_shard** shards, size_t* count,
                                    strata_error* err) {
  return with(self, err, "owned_shards", [&](Instance& in) {
    if (shards == nullptr || count == nullptr) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "owned_shards: shards or count is NULL");
    }
    const strata_shard* theirs = nullptr;
    size_t n = 0;
    const strata_status status = sharding_of(in).owned_shards(in.self, &theirs, &n, err);
    if (status != STRATA_OK) return status;
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
      theirs = in.shards_out.data();
    }
    *shards = theirs;
    *count = n;
    return STRATA_OK;
  });
}
strata_status sharding_publish(void* self, strata_error* err) {
  return with(self, err, "publish", [&](Instance& in) { return sharding_of(in).publish(in.self, err); });
}
strata_status sharding_zero_grad(void* self, strata_error* err) {
  return with(self, err, "zero_grad", [&](Instance& in) { return sharding_of(in).zero_grad(in.self, err); });
}
strata_status sharding_define_group(void* self, uint32_t group, const char* name,
                                    const uint32_t* params, size_t count, strata_error* err) {
  return with(self, err, "define_group", [&](Instance& in) {
    return groups_of(in, "define_group").define_group(in.self, group, name, params, count, err);
  });
}
strata_status sharding_gather(void* self, const strata_group_args* args, strata_error* err) {
  return with(self, err, "gather", [&](Instance& in) {
    const auto& t = groups_of(in, "gather");
    if (args == nullptr || !STRATA_STRUCT_HAS(args, strata_group_args, group)) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "gather: args is NULL or too small to hold group");
    }
    const uint32_t flags = STRATA_STRUCT_HAS(args, strata_group_args, flags) ? args->flags : 0u;
    return t.gather(in.self, args->group, flags, err);
  });
}
strata_status sharding_release(void* self, const strata_group_args* args, strata_error* err) {
  return with(self, err, "release", [&](Instance& in) {
    const auto& t = groups_of(in, "release");
    if (args == nullptr || !STRATA_STRUCT_HAS(args, strata_group_args, group)) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "release: args is NULL or too small to hold group");
    }
    return t.release(in.self, args->group, err);
  });
}
strata_status sharding_param_view(void* self, uint32_t index, strata_param_view* view,
                                  strata_error* err) {
  return with(self, err, "param_view", [&](Instance& in) {
    return groups_of(in, "param_view").param_view(in.self, index, view, err);
  });
}
strata_status sharding_end_micro_step(void* self, const strata_micro_step_args* args,
                                      strata_error* err) {
  return with(self, err, "end_micro_step", [&](Instance& in) {
    const auto& t = groups_of(in, "end_micro_step");
    if (args == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, "end_micro_step: args is NULL");
    const int32_t boundary = STRATA_STRUCT_HAS(args, strata_micro_step_args, boundary) ? args->boundary : 0;
    return t.end_micro_step(in.self, boundary, err);
  });
}

// ---- precision: current layout -> legacy ----------------------------------------------------

const v1_2::precision_ops& precision_of(const Instance& in) {
  return legacy_table<v1_2::precision_ops>(in);
}

strata_status precision_query(void* self, strata_precision_caps* caps, strata_error* err) {
  return with(self, err, "query", [&](Instance& in) { return precision_of(in).query(in.self, caps, err); });
}
strata_status precision_loss_scale(void* self, double* scale, strata_error* err) {
  return with(self, err, "loss_scale",
              [&](Instance& in) { return precision_of(in).loss_scale(in.self, scale, err); });
}
strata_status precision_grad_stats(void* self, const strata_shard* shards, size_t count,
                                   strata_grad_stats* stats, strata_error* err) {
  return with(self, err, "grad_stats", [&](Instance& in) {
    return precision_of(in).grad_stats(in.self, shards_for_legacy(in, shards, count), count, stats, err);
  });
}
strata_status precision_update(void* self, int32_t overflow, strata_error* err) {
  return with(self, err, "update",
              [&](Instance& in) { return precision_of(in).update(in.self, overflow, err); });
}
strata_status precision_cast(void* self, const strata_buffer* src, const strata_buffer* dst,
                             strata_error* err) {
  // Thread-safe as the plugin's cast is: touches nothing of the wrapper but the pointers.
  return with(self, err, "cast",
              [&](Instance& in) { return precision_of(in).cast(in.self, src, dst, err); });
}

// ---- offload: current layout -> legacy ------------------------------------------------------

const v1_2::offload_ops& offload_of(const Instance& in) { return legacy_table<v1_2::offload_ops>(in); }

strata_status offload_query(void* self, strata_offload_caps* caps, strata_error* err) {
  return with(self, err, "query", [&](Instance& in) {
    // 0 unless the plugin says otherwise: a 1.0/1.1 plugin knows nothing of model copies, and a
    // 1.2 plugin that does not write them may leave the field alone. The runtime then makes them.
    if (caps != nullptr && STRATA_STRUCT_HAS(caps, strata_offload_caps, writes_model_copy)) {
      caps->writes_model_copy = 0;
    }
    return offload_of(in).query(in.self, caps, err);
  });
}
strata_status offload_init_state(void* self, const strata_shard* shards, size_t count,
                                 strata_error* err) {
  return with(self, err, "init_state", [&](Instance& in) {
    return offload_of(in).init_state(in.self, shards_for_legacy(in, shards, count), count, err);
  });
}
strata_status offload_step(void* self, const strata_shard* shards, size_t count,
                           const strata_step_args* args, strata_error* err) {
  return with(self, err, "step", [&](Instance& in) {
    return offload_of(in).step(in.self, shards_for_legacy(in, shards, count), count, args, err);
  });
}

// ---- 1.2-layout tables lent to legacy plugins (host->comm, host->precision) -------------------

template <class Body>
strata_status with_link(void* self, strata_error* err, const char* fn, Body&& body) noexcept {
  return guard(err, [&]() -> strata_status {
    if (self == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, std::string("host ") + fn + ": self is NULL");
    return body(*static_cast<Link*>(self));
  });
}

strata_status lent_create(const char*, const strata_host_api*, void** self, strata_error* err) {
  if (self != nullptr) *self = nullptr;
  return set_error(err, STRATA_ERR_INVALID_ARGUMENT,
                   "the host-services table lends an existing instance: its create is not to be called");
}
void lent_destroy(void*) {}  // the runtime owns the lent instance

const strata_comm_ops& comm_of(const Link& l) { return *static_cast<const strata_comm_ops*>(l.ops); }

strata_status lent_comm_query(void* self, strata_comm_caps* caps, strata_error* err) {
  return with_link(self, err, "comm query", [&](Link& l) { return comm_of(l).query(l.self, caps, err); });
}
strata_status lent_allreduce(void* self, const strata_buffer* send, const strata_buffer* recv,
                             int32_t op, strata_request* req, strata_error* err) {
  return with_link(self, err, "comm allreduce", [&](Link& l) {
    strata_coll_args a = sdk::Comm::args(send, recv);
    a.op = op;
    return comm_of(l).allreduce(l.self, &a, req, err);
  });
}
strata_status lent_allgather(void* self, const strata_buffer* send, const strata_buffer* recv,
                             strata_request* req, strata_error* err) {
  return with_link(self, err, "comm allgather", [&](Link& l) {
    const strata_coll_args a = sdk::Comm::args(send, recv);
    return comm_of(l).allgather(l.self, &a, req, err);
  });
}
strata_status lent_allgatherv(void* self, const strata_buffer* send, const strata_buffer* recv,
                              const uint64_t* recv_counts, const uint64_t* displs,
                              strata_request* req, strata_error* err) {
  return with_link(self, err, "comm allgatherv", [&](Link& l) {
    if (comm_of(l).allgatherv == nullptr) fail(STRATA_ERR_UNSUPPORTED, "comm allgatherv: not supported");
    strata_coll_args a = sdk::Comm::args(send, recv);
    a.recv_counts = recv_counts;
    a.displs = displs;
    return comm_of(l).allgatherv(l.self, &a, req, err);
  });
}
strata_status lent_reduce_scatter(void* self, const strata_buffer* send, const strata_buffer* recv,
                                  int32_t op, strata_request* req, strata_error* err) {
  return with_link(self, err, "comm reduce_scatter", [&](Link& l) {
    if (comm_of(l).reduce_scatter == nullptr) {
      fail(STRATA_ERR_UNSUPPORTED, "comm reduce_scatter: not supported");
    }
    strata_coll_args a = sdk::Comm::args(send, recv);
    a.op = op;
    return comm_of(l).reduce_scatter(l.self, &a, req, err);
  });
}
strata_status lent_broadcast(void* self, const strata_buffer* buf, int32_t root, strata_request* req,
                             strata_error* err) {
  return with_link(self, err, "comm broadcast", [&](Link& l) {
    strata_coll_args a = sdk::Comm::args(nullptr, buf);
    a.root = root;
    return comm_of(l).broadcast(l.self, &a, req, err);
  });
}
strata_status lent_barrier(void* self, strata_request* req, strata_error* err) {
  return with_link(self, err, "comm barrier", [&](Link& l) {
    const strata_coll_args a = sdk::Comm::args(nullptr, nullptr);
    return comm_of(l).barrier(l.self, &a, req, err);
  });
}
strata_status lent_wait(void* self, strata_request req, strata_error* err) {
  return with_link(self, err, "comm wait", [&](Link& l) {
    if (comm_of(l).wait == nullptr) fail(STRATA_ERR_UNSUPPORTED, "comm wait: not supported");
    return comm_of(l).wait(l.self, req, err);
  });
}
strata_status lent_test(void* self, strata_request req, int32_t* done, strata_error* err) {
  return with_link(self, err, "comm test", [&](Link& l) {
    if (comm_of(l).test == nullptr) fail(STRATA_ERR_UNSUPPORTED, "comm test: not supported");
    return comm_of(l).test(l.self, req, done, err);
  });
}

// NULL where the current comm has NULL, so a 1.2 plugin that checks sees what is supported.
v1_2::comm_ops lent_comm_table(const strata_comm_ops& current) {
  v1_2::comm_ops t{};
  t.struct_size = sizeof(t);
  t.create = lent_create;
  t.destroy = lent_destroy;
  t.query = lent_comm_query;
  t.allreduce = lent_allreduce;
  t.allgather = lent_allgather;
  t.allgatherv = current.allgatherv != nullptr ? lent_allgatherv : nullptr;
  t.reduce_scatter = current.reduce_scatter != nullptr ? lent_reduce_scatter : nullptr;
  t.broadcast = lent_broadcast;
  t.barrier = lent_barrier;
  t.wait = current.wait != nullptr ? lent_wait : nullptr;
  t.test = current.test != nullptr ? lent_test : nullptr;
  return t;
}

const strata_precision_ops& precision_of(const Link& l) {
  return *static_cast<const strata_precision_ops*>(l.ops);
}

strata_status lent_precision_query(void* self, strata_precision_caps* caps, strata_error* err) {
  return with_link(self, err, "precision query",
                   [&](Link& l) { return precision_of(l).query(l.self, caps, err); });
}
strata_status lent_loss_scale(void* self, double* scale, strata_error* err) {
  return with_link(self, err, "precision loss_scale",
                   [&](Link& l) { return precision_of(l).loss_scale(l.self, scale, err); });
}
strata_status lent_grad_stats(void* self, const strata_shard* shards, size_t count,
                              strata_grad_stats* stats, strata_error* err) {
  return with_link(self, err, "precision grad_stats", [&](Link& l) {
    if (shards_are_1_0(l.caller_minor) && shards != nullptr) {
      const std::vector<strata_shard> current = shards_from_1_0(shards, count);
      return precision_of(l).grad_stats(l.self, current.data(), count, stats, err);
    }
    return precision_of(l).grad_stats(l.self, shards, count, stats, err);
  });
}
strata_status lent_update(void* self, int32_t overflow, strata_error* err) {
  return with_link(self, err, "precision update",
                   [&](Link& l) { return precision_of(l).update(l.self, overflow, err); });
}
strata_status lent_cast(void* self, const strata_buffer* src, const strata_buffer* dst,
                        strata_error* err) {
  return with_link(self, err, "precision cast",
                   [&](Link& l) { return precision_of(l).cast(l.self, src, dst, err); });
}

constexpr v1_2::precision_ops kLentPrecision = {sizeof(v1_2::precision_ops), lent_create,
                                                lent_destroy,                lent_precision_query,
                                                lent_loss_scale,             lent_grad_stats,
                                                lent_update,                 lent_cast};

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
    comm_test};

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
    sharding_end_micro_step};

constexpr strata_precision_ops kPrecisionAdapter = {
    sdk::ops_header<strata_precision_ops>(),
    adapter_create,
    adapter_destroy,
    precision_query,
    precision_loss_scale,
    precision_grad_stats,
    precision_update,
    precision_cast};

constexpr strata_offload_ops kOffloadAdapter = {
    sdk::ops_header<strata_offload_ops>(),
    adapter_create,
    adapter_destroy,
    offload_query,
    offload_init_state,
    offload_step};

// ---- table checks ------------------------------------------------------------------------------

struct Fn {
  const char* name;
  size_t offset;
};

template <class Table>
const void* pointer_at(const Table& t, size_t offset) {
  const void* fn = nullptr;
  std::memcpy(&fn, reinterpret_cast<const char*>(&t) + offset, sizeof(fn));
  return fn;
}

#define STRATA_LEGACY_FN(table, name) Fn{#name, offsetof(table, name)}

size_t size_1_0(int32_t kind) {
  switch (kind) {
    case STRATA_PLUGIN_COMM: return v1_2::kCommSize1_0;
    case STRATA_PLUGIN_SHARDING: return v1_2::kShardingSize1_0;
    case STRATA_PLUGIN_PRECISION: return v1_2::kPrecisionSize1_0;
    case STRATA_PLUGIN_OFFLOAD: return v1_2::kOffloadSize1_0;
    default: return 0;
  }
}

std::vector<Fn> required_1_0(int32_t kind) {
  using namespace v1_2;
  switch (kind) {
    case STRATA_PLUGIN_COMM:
      // allgatherv, reduce_scatter and test are optional as today; wait depends on the caps.
      return {STRATA_LEGACY_FN(comm_ops, create), STRATA_LEGACY_FN(comm_ops, destroy),
              STRATA_LEGACY_FN(comm_ops, query), STRATA_LEGACY_FN(comm_ops, allreduce),
              STRATA_LEGACY_FN(comm_ops, allgather), STRATA_LEGACY_FN(comm_ops, broadcast),
              STRATA_LEGACY_FN(comm_ops, barrier)};
    case STRATA_PLUGIN_SHARDING:
      return {STRATA_LEGACY_FN(sharding_ops, create), STRATA_LEGACY_FN(sharding_ops, destroy),
              STRATA_LEGACY_FN(sharding_ops, query), STRATA_LEGACY_FN(sharding_ops, register_param),
              STRATA_LEGACY_FN(sharding_ops, finalize), STRATA_LEGACY_FN(sharding_ops, grad_ready),
              STRATA_LEGACY_FN(sharding_ops, finish_reduce), STRATA_LEGACY_FN(sharding_ops, owned_shards),
              STRATA_LEGACY_FN(sharding_ops, publish), STRATA_LEGACY_FN(sharding_ops, zero_grad)};
    case STRATA_PLUGIN_PRECISION:
      return {STRATA_LEGACY_FN(precision_ops, create), STRATA_LEGACY_FN(precision_ops, destroy),
              STRATA_LEGACY_FN(precision_ops, query), STRATA_LEGACY_FN(precision_ops, loss_scale),
              STRATA_LEGACY_FN(precision_ops, grad_stats), STRATA_LEGACY_FN(precision_ops, update),
              STRATA_LEGACY_FN(precision_ops, cast)};
    case STRATA_PLUGIN_OFFLOAD:
      return {STRATA_LEGACY_FN(offload_ops, create), STRATA_LEGACY_FN(offload_ops, destroy),
              STRATA_LEGACY_FN(offload_ops, query), STRATA_LEGACY_FN(offload_ops, init_state),
              STRATA_LEGACY_FN(offload_ops, step)};
    default: return {};
  }
}

const std::vector<Fn>& group_fns() {
  using v1_2::sharding_ops;
  static const std::vector<Fn> fns = {
      STRATA_LEGACY_FN(sharding_ops, define_group), STRATA_LEGACY_FN(sharding_ops, gather),
      STRATA_LEGACY_FN(sharding_ops, release), STRATA_LEGACY_FN(sharding_ops, param_view),
      STRATA_LEGACY_FN(sharding_ops, end_micro_step)};
  return fns;
}

#undef STRATA_LEGACY_FN

size_t table_size(const strata_plugin_descriptor& d) { return *static_cast<const size_t*>(d.ops); }

}  // namespace

bool is_legacy(const strata_plugin_descriptor& d) { return d.abi_minor < STRATA_ABI_MINOR_TABLES; }

void check_table(const strata_plugin_descriptor& d, int32_t kind, const std::string& at) {
  const std::string what = plugin_kind_name(kind) + " ops table of ABI 1." + std::to_string(d.abi_minor) +
                           " (the layout before strata_ops_header)";
  if (!is_legacy(d)) {
    throw Error(STRATA_ERR_ABI, at + ": plugin ABI 1." + std::to_string(d.abi_minor) +
                                    " is not a 1.0-1.2 plugin; its tables are checked as today's");
  }
  if (d.kind != kind) {
    throw Error(STRATA_ERR_ABI, at + ": plugin is of kind " + plugin_kind_name(d.kind) + ", expected " +
                                    plugin_kind_name(kind));
  }
  if (d.ops == nullptr) throw Error(STRATA_ERR_ABI, at + ": plugin descriptor has no ops table");
  const size_t size = table_size(d);
  const size_t floor = size_1_0(kind);
  if (floor == 0) throw Error(STRATA_ERR_ABI, at + ": " + what + ": unknown plugin kind");
  if (size < floor) {
    throw Error(STRATA_ERR_ABI, at + ": " + what + " struct_size " + std::to_string(size) +
                                    " is smaller than ABI 1.0's " + std::to_string(floor));
  }
  std::vector<std::string> missing;
  for (const Fn& fn : required_1_0(kind)) {
    if (pointer_at(*static_cast<const v1_2::common_ops*>(d.ops), fn.offset) == nullptr) {
      missing.emplace_back(fn.name);
    }
  }
  if (!missing.empty()) {
    throw Error(STRATA_ERR_ABI, at + ": " + what + " has no " + joined(missing) +
                                    (missing.size() == 1 ? " (required)" : " (all required)"));
  }
  if (kind == STRATA_PLUGIN_SHARDING) {
    std::vector<std::string> present, absent;
    for (const Fn& fn : group_fns()) {
      const bool inside = has_field(size, fn.offset);
      const bool set = inside && pointer_at(*static_cast<const v1_2::common_ops*>(d.ops), fn.offset) != nullptr;
      (set ? present : absent).emplace_back(fn.name);
    }
    if (!present.empty() && !absent.empty()) {
      throw Error(STRATA_ERR_ABI, at + ": " + what + " has " + joined(present) + " but no " +
                                      joined(absent) +
                                      " (the ABI 1.1 parameter-group functions are all five or none)");
    }
  }
}

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
  const auto& t = *static_cast<const v1_2::comm_ops*>(d.ops);
  if (t.allgatherv == nullptr) ops.allgatherv = nullptr;
  if (t.reduce_scatter == nullptr) ops.reduce_scatter = nullptr;
  if (t.wait == nullptr) ops.wait = nullptr;
  if (t.test == nullptr) ops.test = nullptr;
  return ops;
}
template <>
strata_sharding_ops adapter_ops_for<strata_sharding_ops>(const strata_plugin_descriptor& d) {
  strata_sharding_ops ops = kShardingAdapter;
  if (!sharding_has_groups(*static_cast<const v1_2::sharding_ops*>(d.ops), table_size(d))) {
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

strata_status create(const strata_plugin_descriptor& d, const strata_plugin_create_args* args,
                     void** self, strata_error* err) {
  if (self != nullptr) *self = nullptr;
  std::unique_ptr<Instance> in;
  const char* config = "{}";
  const strata_status prepared = guard(err, [&]() -> strata_status {
    if (self == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, "create: self is NULL");
    if (args == nullptr || !STRATA_STRUCT_HAS(args, strata_plugin_create_args, host)) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "create: args is NULL or too small to hold config_json and host");
    }
    if (!is_legacy(d) || d.ops == nullptr) {
      fail(STRATA_ERR_ABI, "legacy create: plugin '" + std::string(d.name != nullptr ? d.name : "?") +
                               "' is not a 1.0-1.2 plugin with an ops table");
    }
    if (args->config_json != nullptr) config = args->config_json;
    in = std::make_unique<Instance>();
    in->kind = d.kind;
    in->minor = d.abi_minor;
    in->ops = d.ops;
    in->ops_size = table_size(d);

    // Today's host table cut to 1.2: the same layout, which only grew at the end.
    const strata_host_api* host = args->host;
    if (host != nullptr) {
      const size_t n = std::min(host->struct_size, v1_2::kHostSize1_2);
      std::memcpy(&in->host, host, n);
      in->host.struct_size = n;
      in->host.abi_minor = std::min(host->abi_minor, v1_2::kHostMinor);
      if (STRATA_STRUCT_HAS(&in->host, strata_host_api, comm_self) && in->host.comm != nullptr) {
        in->comm_link = Link{in->host.comm, in->host.comm_self, d.abi_minor};
        in->host_comm = lent_comm_table(*in->host.comm);
        in->host.comm = reinterpret_cast<const strata_comm_ops*>(&in->host_comm);
        in->host.comm_self = &in->comm_link;
      }
      if (STRATA_STRUCT_HAS(&in->host, strata_host_api, precision_self) && in->host.precision != nullptr) {
        in->precision_link = Link{in->host.precision, in->host.precision_self, d.abi_minor};
        in->host_precision = kLentPrecision;
        in->host.precision = reinterpret_cast<const strata_precision_ops*>(&in->host_precision);
        in->host.precision_self = &in->precision_link;
      }
    }
    return STRATA_OK;
  });
  if (prepared != STRATA_OK) return prepared;

  const strata_host_api* legacy_host = args->host != nullptr ? &in->host : nullptr;
  void* legacy_self = nullptr;
  const strata_status status =
      static_cast<const v1_2::common_ops*>(d.ops)->create(config, legacy_host, &legacy_self, err);
  if (status != STRATA_OK) return status;  // nothing to destroy: a failed create owns nothing
  in->self = legacy_self;
  *self = in.release();
  return STRATA_OK;
}

}  // namespace strata::rt::legacy
