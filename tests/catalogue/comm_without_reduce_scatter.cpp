// Test-only comm plugin for the catalogue: a world of one process whose collectives are copies,
// and whose table leaves reduce_scatter NULL (not supported, ABI 1.3). With
// FIXTURE_CLAIM_REDUCE_SCATTER its caps claim the bit all the same, which the runtime must ignore.
// ZeRO stages 1-3 need reduce_scatter, so a manifest pairing it with stage 3 must be refused at
// start-up with a sentence naming both sides.
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

strata_status create(const strata_plugin_create_args* args, void** self, strata_error* err) {
  return guard(err, [&] {
    strata::sdk::read_create_args(args);
    *self = &instance_tag;
  });
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
#ifdef FIXTURE_CLAIM_REDUCE_SCATTER
    // Claims the bit without the function: the runtime must clear it before anyone reads caps.
    caps->collective_mask |= STRATA_COLL_BIT(STRATA_COLL_REDUCE_SCATTER);
#endif
    caps->device_mask = STRATA_DEVICE_BIT(STRATA_DEVICE_HOST);
    caps->nonblocking = 0;
  });
}

// With one rank every reduction and gather is the identity.
strata_status allreduce(void*, const strata_coll_args* args, strata_request* req,
                        strata_error* err) {
  return guard(err, [&] {
    blocking_only(req);
    copy(args->send, args->recv, 0);
  });
}

strata_status allgather(void*, const strata_coll_args* args, strata_request* req,
                        strata_error* err) {
  return guard(err, [&] {
    blocking_only(req);
    copy(args->send, args->recv, 0);
  });
}

strata_status allgatherv(void*, const strata_coll_args* args, strata_request* req,
                         strata_error* err) {
  return guard(err, [&] {
    blocking_only(req);
    copy(args->send, args->recv, args->displs[0]);
  });
}

strata_status broadcast(void*, const strata_coll_args*, strata_request* req, strata_error* err) {
  return guard(err, [&] { blocking_only(req); });
}

strata_status barrier(void*, const strata_coll_args*, strata_request* req, strata_error* err) {
  return guard(err, [&] { blocking_only(req); });
}

// Blocking only: no requests, so wait (required only with nonblocking caps) and test are NULL,
// and so is reduce_scatter, which this plugin does not offer.
constexpr strata_comm_ops make_ops() {
  strata_comm_ops ops{};
  ops.header = strata::sdk::ops_header<strata_comm_ops>();
  ops.create = create;
  ops.destroy = destroy;
  ops.query = query;
  ops.allreduce = allreduce;
  ops.allgather = allgather;
  ops.allgatherv = allgatherv;
  ops.reduce_scatter = nullptr;
  ops.broadcast = broadcast;
  ops.barrier = barrier;
  ops.wait = nullptr;
  ops.test = nullptr;
  return ops;
}

constexpr strata_comm_ops kOps = make_ops();

}  // namespace

STRATA_PLUGIN(kOps, "test-comm-no-reduce-scatter", "0.0",
              "catalogue fixture: one rank, no reduce_scatter")
