// Comm plugin for the compatibility tests: a world of one process. Every collective is a copy (or
// nothing, in place); blocking only (nonblocking 0, no wait or test). Built against the 1.0, 1.2
// and today's header from this one source: the collectives read their arguments positionally
// before ABI 1.3 and from strata_coll_args after.
#include "compat_plugin.hpp"

#include <memory>

namespace {

struct Solo {
  const strata_host_api* host = nullptr;
};

strata_status create_impl(const char*, const strata_host_api* host, void** self, strata_error* err) {
  return compat::guard(err, [&] {
    auto solo = std::make_unique<Solo>();
    solo->host = host;
    compat::log(host, STRATA_LOG_INFO, "compat_solo_comm: built with ABI %s, host ABI %u.%u, one rank",
                compat::built_with(), host != nullptr ? host->abi_major : 0u,
                host != nullptr ? COMPAT_RUNTIME_MINOR(host) : 0u);
    *self = solo.release();
  });
}
COMPAT_CREATE(create_impl)

void destroy(void* self) { delete static_cast<Solo*>(self); }

strata_status query(void*, strata_comm_caps* caps, strata_error* err) {
  return compat::guard(err, [&] {
    if (STRATA_STRUCT_HAS(caps, strata_comm_caps, rank)) caps->rank = 0;
    if (STRATA_STRUCT_HAS(caps, strata_comm_caps, size)) caps->size = 1;
    if (STRATA_STRUCT_HAS(caps, strata_comm_caps, local_rank)) caps->local_rank = 0;
    if (STRATA_STRUCT_HAS(caps, strata_comm_caps, local_size)) caps->local_size = 1;
    if (STRATA_STRUCT_HAS(caps, strata_comm_caps, dtype_mask)) caps->dtype_mask = (1u << STRATA_DTYPE_COUNT) - 1u;
    if (STRATA_STRUCT_HAS(caps, strata_comm_caps, collective_mask)) caps->collective_mask = 0x3fu;
    if (STRATA_STRUCT_HAS(caps, strata_comm_caps, device_mask)) caps->device_mask = STRATA_DEVICE_BIT(STRATA_DEVICE_HOST);
    if (STRATA_STRUCT_HAS(caps, strata_comm_caps, nonblocking)) caps->nonblocking = 0;
  });
}

void blocking_only(strata_request* req) {
  if (req != nullptr) compat::fail(STRATA_ERR_UNSUPPORTED, "compat_solo_comm is blocking only (req must be NULL)");
}

void require(const strata_buffer* b, const char* what) {
  if (b == nullptr) compat::fail(STRATA_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
  if (compat::dtype_size(b->dtype) == 0) compat::fail(STRATA_ERR_INVALID_ARGUMENT, std::string(what) + ": unknown dtype");
  if (b->device.type != STRATA_DEVICE_HOST) compat::fail(STRATA_ERR_UNSUPPORTED, "host memory only");
}

// recv[offset, offset + send.count) = send: the one rank's block.
void copy(const strata_buffer* send, const strata_buffer* recv, uint64_t offset) {
  require(send, "send");
  require(recv, "recv");
  if (send->dtype != recv->dtype) compat::fail(STRATA_ERR_INVALID_ARGUMENT, "send and recv dtypes differ");
  if (offset + send->count > recv->count) compat::fail(STRATA_ERR_INVALID_ARGUMENT, "recv too small");
  const size_t unit = compat::dtype_size(send->dtype);
  char* to = static_cast<char*>(recv->data) + offset * unit;
  if (to != send->data && send->count > 0) std::memmove(to, send->data, send->count * unit);
}

void reduce(const strata_buffer* send, const strata_buffer* recv, int32_t op) {
  if (op < STRATA_SUM || op > STRATA_MAX) compat::fail(STRATA_ERR_INVALID_ARGUMENT, "unknown reduce op");
  require(send, "send");
  require(recv, "recv");
  if (send->count != recv->count) compat::fail(STRATA_ERR_INVALID_ARGUMENT, "send and recv counts differ");
  copy(send, recv, 0);  // every op over one rank is the identity (AVG divides by 1)
}

void gatherv(const strata_buffer* send, const strata_buffer* recv, const uint64_t* counts,
             const uint64_t* displs) {
  if (counts == nullptr || displs == nullptr) compat::fail(STRATA_ERR_INVALID_ARGUMENT, "recv_counts or displs is NULL");
  require(send, "send");
  if (send->count != counts[0]) compat::fail(STRATA_ERR_INVALID_ARGUMENT, "send.count != recv_counts[0]");
  copy(send, recv, displs[0]);
}

void scatter(const strata_buffer* send, const strata_buffer* recv, int32_t op) {
  require(send, "send");
  require(recv, "recv");
  if (send->count != recv->count) compat::fail(STRATA_ERR_INVALID_ARGUMENT, "send.count != recv.count * 1");
  reduce(send, recv, op);
}

void bcast(const strata_buffer* buf, int32_t root) {
  require(buf, "buffer");
  if (root != 0) compat::fail(STRATA_ERR_INVALID_ARGUMENT, "root must be 0 in a world of one");
}

#if COMPAT_TABLES
strata_status allreduce(void*, const strata_coll_args* a, strata_request* req, strata_error* err) {
  return compat::guard(err, [&] { blocking_only(req); reduce(a->send, a->recv, a->op); });
}
strata_status allgather(void*, const strata_coll_args* a, strata_request* req, strata_error* err) {
  return compat::guard(err, [&] { blocking_only(req); copy(a->send, a->recv, 0); });
}
strata_status allgatherv(void*, const strata_coll_args* a, strata_request* req, strata_error* err) {
  return compat::guard(err, [&] { blocking_only(req); gatherv(a->send, a->recv, a->recv_counts, a->displs); });
}
strata_status reduce_scatter(void*, const strata_coll_args* a, strata_request* req, strata_error* err) {
  return compat::guard(err, [&] { blocking_only(req); scatter(a->send, a->recv, a->op); });
}
strata_status broadcast(void*, const strata_coll_args* a, strata_request* req, strata_error* err) {
  return compat::guard(err, [&] { blocking_only(req); bcast(a->recv, a->root); });
}
strata_status barrier(void*, const strata_coll_args*, strata_request* req, strata_error* err) {
  return compat::guard(err, [&] { blocking_only(req); });
}
#else
strata_status allreduce(void*, const strata_buffer* send, const strata_buffer* recv, int32_t op,
                        strata_request* req, strata_error* err) {
  return compat::guard(err, [&] { blocking_only(req); reduce(send, recv, op); });
}
strata_status allgather(void*, const strata_buffer* send, const strata_buffer* recv, strata_request* req,
                        strata_error* err) {
  return compat::guard(err, [&] { blocking_only(req); copy(send, recv, 0); });
}
strata_status allgatherv(void*, const strata_buffer* send, const strata_buffer* recv,
                         const uint64_t* recv_counts, const uint64_t* displs, strata_request* req,
                         strata_error* err) {
  return compat::guard(err, [&] { blocking_only(req); gatherv(send, recv, recv_counts, displs); });
}
strata_status reduce_scatter(void*, const strata_buffer* send, const strata_buffer* recv, int32_t op,
                             strata_request* req, strata_error* err) {
  return compat::guard(err, [&] { blocking_only(req); scatter(send, recv, op); });
}
strata_status broadcast(void*, const strata_buffer* buf, int32_t root, strata_request* req,
                        strata_error* err) {
  return compat::guard(err, [&] { blocking_only(req); bcast(buf, root); });
}
strata_status barrier(void*, strata_request* req, strata_error* err) {
  return compat::guard(err, [&] { blocking_only(req); });
}
#endif

const strata_comm_ops kOps = {COMPAT_OPS_HEADER(strata_comm_ops, STRATA_PLUGIN_COMM) create, destroy,
                              query, allreduce, allgather, allgatherv, reduce_scatter, broadcast,
                              barrier, nullptr /* wait */, nullptr /* test */
#if STRATA_ABI_MINOR >= 10
                              , nullptr /* alltoallv */, nullptr /* split: not offered */
#endif
};

}  // namespace

COMPAT_ENTRY(kOps, STRATA_PLUGIN_COMM, "compat-solo-comm", "a world of one process, built against one ABI header")
