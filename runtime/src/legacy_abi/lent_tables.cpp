// The 1.2-layout tables lent to legacy plugins (host->comm, host->precision).
#include "lent_tables.hpp"

#include "adapter_support.hpp"

namespace strata::rt::legacy {
namespace {

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

}  // namespace

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

const v1_2::precision_ops& lent_precision_table() { return kLentPrecision; }

}  // namespace strata::rt::legacy
