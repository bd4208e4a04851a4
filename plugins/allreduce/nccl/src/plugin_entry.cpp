// The plugin's C boundary: descriptor, strata_comm_ops table and the functions in it. Every body
// runs inside sdk::guard so that no exception crosses into the host.
#include "config.hpp"
#include "instance.hpp"

#include <strata/comm/collective_args.hpp>

#include <memory>
#include <string>

namespace strata::allreduce_nccl {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, message);
}

Instance& instance(void* self) {
  if (self == nullptr) invalid("self is NULL; expected an instance from create()");
  return *static_cast<Instance*>(self);
}

Request& owned_request(Instance& inst, strata_request handle, const char* call) {
  auto* request = reinterpret_cast<Request*>(handle);
  if (request == nullptr) invalid(std::string(call) + ": req is NULL");
  if (request->magic != Request::kMagic || request->owner != &inst) {
    invalid(std::string(call) + ": req is not a pending request of this instance");
  }
  return *request;
}

// Starts a collective. With req == NULL it is waited for here (the contract: the result is in
// recv on return); otherwise the Request is handed out until wait().
template <class Start>
strata_status run(void* self, strata_request* req, strata_error* err, Start&& start) {
  if (req != nullptr) *req = nullptr;
  return sdk::guard(err, [&] {
    Instance& inst = instance(self);
    auto request = std::make_unique<Request>();
    request->owner = &inst;
    start(*inst.collectives, *request);
    if (req == nullptr) {
      inst.comm->wait_for(request->done, request->started, request->call);
      return;
    }
    *req = reinterpret_cast<strata_request>(request.release());
    ++inst.live_requests;
  });
}

strata_status create(const strata_plugin_create_args* args, void** self, strata_error* err) {
  return sdk::guard(err, [&] {
    if (self == nullptr) invalid("create: self is NULL; expected where to store the instance");
    *self = nullptr;
    const sdk::CreateArgs create = sdk::read_create_args(args);
    const Config config = parse_config(create.config_json);  // before any device or peer
    auto inst = std::make_unique<Instance>(create.host, config);
    inst->host.log(STRATA_LOG_INFO,
                   "allreduce-nccl: rank %d of %d (local %d of %d) on cuda:%d of %d visible, "
                   "unique id through %s, timeout %g s, NCCL %d",
                   inst->comm->rank(), inst->comm->size(), inst->env.local_rank,
                   inst->env.local_size, inst->device.device, inst->device.visible, inst->bootstrap,
                   inst->config.timeout_seconds, NCCL_VERSION_CODE);
    *self = inst.release();
  });
}

void destroy(void* self) {
  auto* inst = static_cast<Instance*>(self);
  if (inst == nullptr) return;
  if (inst->live_requests > 0) {
    inst->host.log(STRATA_LOG_WARN, "allreduce-nccl: destroyed with %d request(s) never waited",
                   inst->live_requests);
  }
  delete inst;
}

// Everything this plugin offers; write_comm_caps copies what fits the caller's struct_size.
strata_status query(void* self, strata_comm_caps* caps, strata_error* err) {
  return sdk::guard(err, [&] {
    const Instance& inst = instance(self);
    strata_comm_caps full{};
    full.struct_size = sizeof(full);
    full.rank = inst.comm->rank();
    full.size = inst.comm->size();
    full.local_rank = inst.env.local_rank;
    full.local_size = inst.env.local_size;
    full.dtype_mask = (1u << STRATA_DTYPE_COUNT) - 1u;  // NCCL has a type for each
    full.collective_mask =
        STRATA_COLL_BIT(STRATA_COLL_ALLREDUCE) | STRATA_COLL_BIT(STRATA_COLL_ALLGATHER) |
        STRATA_COLL_BIT(STRATA_COLL_ALLGATHERV) | STRATA_COLL_BIT(STRATA_COLL_REDUCE_SCATTER) |
        STRATA_COLL_BIT(STRATA_COLL_BROADCAST) | STRATA_COLL_BIT(STRATA_COLL_BARRIER);
    full.device_mask = STRATA_DEVICE_BIT(STRATA_DEVICE_CUDA);
    full.nonblocking = 1;
    sdk::comm::write_comm_caps(caps, full);
  });
}

strata_status allreduce(void* self, const strata_coll_args* args, strata_request* req,
                        strata_error* err) {
  return run(self, req, err, [&](Collectives& c, Request& r) {
    c.allreduce(sdk::comm::coll_args(args, "allreduce"), r);
  });
}

strata_status allgather(void* self, const strata_coll_args* args, strata_request* req,
                        strata_error* err) {
  return run(self, req, err, [&](Collectives& c, Request& r) {
    c.allgather(sdk::comm::coll_args(args, "allgather"), r);
  });
}

strata_status allgatherv(void* self, const strata_coll_args* args, strata_request* req,
                         strata_error* err) {
  return run(self, req, err, [&](Collectives& c, Request& r) {
    c.allgatherv(sdk::comm::coll_args(args, "allgatherv"), r);
  });
}

strata_status reduce_scatter(void* self, const strata_coll_args* args, strata_request* req,
                             strata_error* err) {
  return run(self, req, err, [&](Collectives& c, Request& r) {
    c.reduce_scatter(sdk::comm::coll_args(args, "reduce_scatter"), r);
  });
}

strata_status broadcast(void* self, const strata_coll_args* args, strata_request* req,
                        strata_error* err) {
  return run(self, req, err, [&](Collectives& c, Request& r) {
    c.broadcast(sdk::comm::coll_args(args, "broadcast"), r);
  });
}

strata_status barrier(void* self, const strata_coll_args* args, strata_request* req,
                      strata_error* err) {
  return run(self, req, err, [&](Collectives& c, Request& r) {
    sdk::comm::coll_args(args, "barrier");
    c.barrier(r);
  });
}

strata_status wait(void* self, strata_request req, strata_error* err) {
  return sdk::guard(err, [&] {
    Instance& inst = instance(self);
    std::unique_ptr<Request> request(&owned_request(inst, req, "wait"));
    --inst.live_requests;
    inst.comm->wait_for(request->done, request->started, request->call);
  });
}

strata_status test(void* self, strata_request req, int32_t* done, strata_error* err) {
  return sdk::guard(err, [&] {
    Instance& inst = instance(self);
    Request& request = owned_request(inst, req, "test");
    if (done == nullptr) invalid("test: done is NULL");
    *done = inst.comm->poll(request.done, request.started, request.call) ? 1 : 0;
  });
}

constexpr strata_comm_ops kOps = {
    .header = sdk::ops_header<strata_comm_ops>(),
    .create = create,
    .destroy = destroy,
    .query = query,
    .allreduce = allreduce,
    .allgather = allgather,
    .allgatherv = allgatherv,
    .reduce_scatter = reduce_scatter,
    .broadcast = broadcast,
    .barrier = barrier,
    .wait = wait,
    .test = test,
};

}  // namespace
}  // namespace strata::allreduce_nccl

// Floor 1.3: the host stream (cuda_stream, ABI 1.7) is read only where the runtime has it; an
// older runtime's host works on the legacy default stream, which is what a NULL stream means.
STRATA_PLUGIN(strata::allreduce_nccl::kOps, "allreduce-nccl", "0.1.0",
              "collectives over NCCL for CUDA buffers, on the plugin's own stream, ordered with "
              "the host's stream by events")
