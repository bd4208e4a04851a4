// Test-only comm plugin for the catalogue: a world of one process whose caps say it moves CUDA
// device memory only (as allreduce-nccl does), so that the runtime's placement check runs on a
// machine without a GPU. Its collectives are identities on what they are given (the runtime's
// own start-up exchanges are host buffers); a job whose parameters are in host memory must be
// refused at finalize, before any of them reaches a collective.
#include <strata/plugin.hpp>

#include <cstring>

namespace {

using strata::sdk::dtype_size;
using strata::sdk::fail;
using strata::sdk::guard;

int instance_tag = 0;  // self must be non-null; there is no state

void copy(const strata_buffer* send, const strata_buffer* recv) {
  if (send->device.type != STRATA_DEVICE_HOST) {
    fail(STRATA_ERR_UNSUPPORTED, "this test comm plugin never touches device memory");
  }
  if (recv->data != send->data) {
    std::memmove(recv->data, send->data, send->count * dtype_size(send->dtype));
  }
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
                            STRATA_COLL_BIT(STRATA_COLL_BROADCAST) |
                            STRATA_COLL_BIT(STRATA_COLL_BARRIER);
    caps->device_mask = STRATA_DEVICE_BIT(STRATA_DEVICE_CUDA);
    caps->nonblocking = 0;
  });
}

strata_status identity(void*, const strata_coll_args* args, strata_request* req,
                       strata_error* err) {
  return guard(err, [&] {
    if (req != nullptr) fail(STRATA_ERR_UNSUPPORTED, "this test comm plugin is blocking only");
    copy(args->send, args->recv);
  });
}

strata_status nothing(void*, const strata_coll_args*, strata_request* req, strata_error* err) {
  return guard(err, [&] {
    if (req != nullptr) fail(STRATA_ERR_UNSUPPORTED, "this test comm plugin is blocking only");
  });
}

constexpr strata_comm_ops make_ops() {
  strata_comm_ops ops{};
  ops.header = strata::sdk::ops_header<strata_comm_ops>();
  ops.create = create;
  ops.destroy = destroy;
  ops.query = query;
  ops.allreduce = identity;
  ops.allgather = identity;
  ops.allgatherv = nullptr;
  ops.reduce_scatter = nullptr;
  ops.broadcast = nothing;  // one rank: the root's values are already everywhere
  ops.barrier = nothing;
  ops.wait = nullptr;
  ops.test = nullptr;
  return ops;
}

constexpr strata_comm_ops kOps = make_ops();

}  // namespace

STRATA_PLUGIN(kOps, "test-comm-cuda-only", "0.0",
              "catalogue fixture: one rank, caps say CUDA device memory only")
