// Test-only comm plugin for the catalogue: a world of one process whose collectives are copies,
// and whose capabilities leave out reduce_scatter. ZeRO stages 1-3 need reduce_scatter, so a
// manifest pairing it with stage 3 must be refused at start-up with a sentence naming both sides.
#include <strata/plugin.hpp>

#include <cstring>

namespace {

using strata::sdk::dtype_size;
using strata::sdk::fail;
using strata::sdk::guard;

int instance_tag = 0;  // self must be non-null; there is no state

void copy(const strata_buffer* send, const strata_buffer* recv, uint64_t offset) {
  const size_t bytes = send->count * dtype_size(send->dtype);
  auto* dst = static_cast<char*>(recv->data) + offset * dtype_size(recv->dtype);
  if (dst != send->data) std::memmove(dst, send->data, bytes);
}

void blocking_only(strata_request* req) {
  if (req != nullptr) fail(STRATA_ERR_UNSUPPORTED, "this test comm plugin is blocking only");
}

strata_status create(const char*, const strata_host_api*, void** self, strata_error* err) {
  return guard(err, [&] { *self = &instance_tag; });
}

void destroy(void*) {}

strata_status query(void*, strata_comm_caps* caps, strata_error* err) {
  return guard(err, [&] {
    caps->rank = 0;
    caps->size = 1;
    caps->local_rank = 0;
    caps->local_size = 1;
    caps->dtype_mask = (1u << STRATA_DTYPE_COUNT) - 1u;
    caps->collective_mask = STRATA_COLL_BIT(STRATA_COLL_ALLREDUCE) |
                            STRATA_COLL_BIT(STRATA_COLL_ALLGATHER) |
                            STRATA_COLL_BIT(STRATA_COLL_ALLGATHERV) |
                            STRATA_COLL_BIT(STRATA_COLL_BROADCAST) |
                            STRATA_COLL_BIT(STRATA_COLL_BARRIER);  // no REDUCE_SCATTER
    caps->device_mask = STRATA_DEVICE_BIT(STRATA_DEVICE_HOST);
    caps->nonblocking = 0;
  });
}

// With one rank every reduction and gather is the identity.
strata_status allreduce(void*, const strata_buffer* send, const strata_buffer* recv, int32_t,
                        strata_request* req, strata_error* err) {
  return guard(err, [&] {
    blocking_only(req);
    copy(send, recv, 0);
  });
}

strata_status allgather(void*, const strata_buffer* send, const strata_buffer* recv,
                        strata_request* req, strata_error* err) {
  return guard(err, [&] {
    blocking_only(req);
    copy(send, recv, 0);
  });
}

strata_status allgatherv(void*, const strata_buffer* send, const strata_buffer* recv,
                         const uint64_t*, const uint64_t* displs, strata_request* req,
                         strata_error* err) {
  return guard(err, [&] {
    blocking_only(req);
    copy(send, recv, displs[0]);
  });
}

strata_status reduce_scatter(void*, const strata_buffer*, const strata_buffer*, int32_t,
                             strata_request*, strata_error* err) {
  return guard(err, [] { fail(STRATA_ERR_UNSUPPORTED, "reduce_scatter is not offered"); });
}

strata_status broadcast(void*, const strata_buffer*, int32_t, strata_request* req,
                        strata_error* err) {
  return guard(err, [&] { blocking_only(req); });
}

strata_status barrier(void*, strata_request* req, strata_error* err) {
  return guard(err, [&] { blocking_only(req); });
}

strata_status wait(void*, strata_request, strata_error* err) {
  return guard(err, [] { fail(STRATA_ERR_UNSUPPORTED, "no requests: blocking only"); });
}

strata_status test(void*, strata_request, int32_t*, strata_error* err) {
  return guard(err, [] { fail(STRATA_ERR_UNSUPPORTED, "no requests: blocking only"); });
}

const strata_comm_ops kOps = {sizeof(strata_comm_ops), create,     destroy,   query,
                              allreduce,               allgather,  allgatherv, reduce_scatter,
                              broadcast,               barrier,    wait,      test};

const strata_plugin_descriptor kDescriptor = {
    sizeof(strata_plugin_descriptor), STRATA_ABI_MAJOR, STRATA_ABI_MINOR, STRATA_PLUGIN_COMM,
    "test-comm-no-reduce-scatter", "0.0", "catalogue fixture: one rank, no reduce_scatter", &kOps};

}  // namespace

STRATA_PLUGIN_EXPORT const strata_plugin_descriptor* strata_plugin_entry_v1(void) {
  return &kDescriptor;
}
