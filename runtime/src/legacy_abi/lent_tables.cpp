// The 1.2-layout tables lent to legacy plugins (host->comm, host->precision): functions of the
// frozen header's signatures that forward to today's instance named by their self, a Link.
#include "lent_tables.hpp"

#include "adapter_support.hpp"

namespace strata::rt::legacy {
namespace {

// Runs `body(link, err)` for a lent function: checks self, catches everything; the body works in
// today's types and its status goes back as the plugin's.
template <class Body>
v1_2::strata_status with_link(void* self, v1_2::strata_error* legacy_err, const char* fn,
                              Body&& body) noexcept {
  strata_error* err = as_today(legacy_err);
  return as_legacy(guard(err, [&]() -> strata_status {
    if (self == nullptr) {
      fail(STRATA_ERR_INVALID_ARGUMENT, std::string("host ") + fn + ": self is NULL");
    }
    return body(*static_cast<Link*>(self), err);
  }));
}

v1_2::strata_status lent_create(const char*, const v1_2::strata_host_api*, void** self,
                                v1_2::strata_error* err) {
  if (self != nullptr) *self = nullptr;
  return as_legacy(set_error(as_today(err), STRATA_ERR_INVALID_ARGUMENT,
                             "the host-services table lends an existing instance: its create is "
                             "not to be called"));
}
void lent_destroy(void*) {}  // the runtime owns the lent instance

const strata_comm_ops& comm_of(const Link& l) { return *static_cast<const strata_comm_ops*>(l.ops); }

v1_2::strata_status lent_comm_query(void* self, v1_2::strata_comm_caps* caps,
                                    v1_2::strata_error* e) {
  return with_link(self, e, "comm query", [&](Link& l, strata_error* err) {
    return comm_of(l).query(l.self, as_today(caps), err);
  });
}
v1_2::strata_status lent_allreduce(void* self, const v1_2::strata_buffer* send,
                                   const v1_2::strata_buffer* recv, int32_t op,
                                   v1_2::strata_request* req, v1_2::strata_error* e) {
  return with_link(self, e, "comm allreduce", [&](Link& l, strata_error* err) {
    strata_coll_args a = sdk::Comm::args(as_today(send), as_today(recv));
    a.op = op;
    return comm_of(l).allreduce(l.self, &a, req, err);
  });
}
v1_2::strata_status lent_allgather(void* self, const v1_2::strata_buffer* send,
                                   const v1_2::strata_buffer* recv, v1_2::strata_request* req,
                                   v1_2::strata_error* e) {
  return with_link(self, e, "comm allgather", [&](Link& l, strata_error* err) {
    const strata_coll_args a = sdk::Comm::args(as_today(send), as_today(recv));
    return comm_of(l).allgather(l.self, &a, req, err);
  });
}
v1_2::strata_status lent_allgatherv(void* self, const v1_2::strata_buffer* send,
                                    const v1_2::strata_buffer* recv, const uint64_t* recv_counts,
                                    const uint64_t* displs, v1_2::strata_request* req,
                                    v1_2::strata_error* e) {
  return with_link(self, e, "comm allgatherv", [&](Link& l, strata_error* err) {
    if (comm_of(l).allgatherv == nullptr) {
      fail(STRATA_ERR_UNSUPPORTED, "comm allgatherv: not supported");
    }
    strata_coll_args a = sdk::Comm::args(as_today(send), as_today(recv));
    a.recv_counts = recv_counts;
    a.displs = displs;
    return comm_of(l).allgatherv(l.self, &a, req, err);
  });
}
v1_2::strata_status lent_reduce_scatter(void* self, const v1_2::strata_buffer* send,
                                        const v1_2::strata_buffer* recv, int32_t op,
                                        v1_2::strata_request* req, v1_2::strata_error* e) {
  return with_link(self, e, "comm reduce_scatter", [&](Link& l, strata_error* err) {
    if (comm_of(l).reduce_scatter == nullptr) {
      fail(STRATA_ERR_UNSUPPORTED, "comm reduce_scatter: not supported");
    }
    strata_coll_args a = sdk::Comm::args(as_today(send), as_today(recv));
    a.op = op;
    return comm_of(l).reduce_scatter(l.self, &a, req, err);
  });
}
v1_2::strata_status lent_broadcast(void* self, const v1_2::strata_buffer* buf, int32_t root,
                                   v1_2::strata_request* req, v1_2::strata_error* e) {
  return with_link(self, e, "comm broadcast", [&](Link& l, strata_error* err) {
    strata_coll_args a = sdk::Comm::args(nullptr, as_today(buf));
    a.root = root;
    return comm_of(l).broadcast(l.self, &a, req, err);
  });
}
v1_2::strata_status lent_barrier(void* self, v1_2::strata_request* req, v1_2::strata_error* e) {
  return with_link(self, e, "comm barrier", [&](Link& l, strata_error* err) {
    const strata_coll_args a = sdk::Comm::args(nullptr, nullptr);
    return comm_of(l).barrier(l.self, &a, req, err);
  });
}
v1_2::strata_status lent_wait(void* self, v1_2::strata_request req, v1_2::strata_error* e) {
  return with_link(self, e, "comm wait", [&](Link& l, strata_error* err) {
    if (comm_of(l).wait == nullptr) fail(STRATA_ERR_UNSUPPORTED, "comm wait: not supported");
    return comm_of(l).wait(l.self, req, err);
  });
}
v1_2::strata_status lent_test(void* self, v1_2::strata_request req, int32_t* done,
                              v1_2::strata_error* e) {
  return with_link(self, e, "comm test", [&](Link& l, strata_error* err) {
    if (comm_of(l).test == nullptr) fail(STRATA_ERR_UNSUPPORTED, "comm test: not supported");
    return comm_of(l).test(l.self, req, done, err);
  });
}

const strata_precision_ops& precision_of(const Link& l) {
  return *static_cast<const strata_precision_ops*>(l.ops);
}

v1_2::strata_status lent_precision_query(void* self, v1_2::strata_precision_caps* caps,
                                         v1_2::strata_error* e) {
  return with_link(self, e, "precision query", [&](Link& l, strata_error* err) {
    return precision_of(l).query(l.self, as_today(caps), err);
  });
}
v1_2::strata_status lent_loss_scale(void* self, double* scale, v1_2::strata_error* e) {
  return with_link(self, e, "precision loss_scale", [&](Link& l, strata_error* err) {
    return precision_of(l).loss_scale(l.self, scale, err);
  });
}
v1_2::strata_status lent_grad_stats(void* self, const v1_2::strata_shard* shards, size_t count,
                                    v1_2::strata_grad_stats* stats, v1_2::strata_error* e) {
  return with_link(self, e, "precision grad_stats", [&](Link& l, strata_error* err) {
    if (shards_are_1_0(l.caller_minor) && shards != nullptr) {
      const std::vector<strata_shard> current = shards_from_1_0(shards, count);
      return precision_of(l).grad_stats(l.self, current.data(), count, as_today(stats), err);
    }
    return precision_of(l).grad_stats(l.self, as_today(shards), count, as_today(stats), err);
  });
}
v1_2::strata_status lent_update(void* self, int32_t overflow, v1_2::strata_error* e) {
  return with_link(self, e, "precision update", [&](Link& l, strata_error* err) {
    return precision_of(l).update(l.self, overflow, err);
  });
}
v1_2::strata_status lent_cast(void* self, const v1_2::strata_buffer* src,
                              const v1_2::strata_buffer* dst, v1_2::strata_error* e) {
  return with_link(self, e, "precision cast", [&](Link& l, strata_error* err) {
    return precision_of(l).cast(l.self, as_today(src), as_today(dst), err);
  });
}

constexpr v1_2::strata_precision_ops kLentPrecision = {
    sizeof(v1_2::strata_precision_ops), lent_create, lent_destroy, lent_precision_query,
    lent_loss_scale, lent_grad_stats, lent_update, lent_cast};

}  // namespace

v1_2::strata_comm_ops lent_comm_table(const strata_comm_ops& current) {
  v1_2::strata_comm_ops t{};
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

const v1_2::strata_precision_ops& lent_precision_table() { return kLentPrecision; }

}  // namespace strata::rt::legacy
