// The plugin's C boundary: descriptor, strata_comm_ops table and the functions in it. Every body
// runs inside sdk::guard so that no exception crosses into the host.
#include "instance.hpp"

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

namespace strata::allreduce_mpi {
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

// Starts a collective. With req == NULL it runs on a stack Request and is finished at once, on
// this thread but after the queued non-blocking work (collective order). Otherwise the Request
// moves to the heap and is handed out until wait(); its MPI work is queued on the progress thread
// as blocking calls, or started as MPI_I* calls where MPI's thread support does not allow that.
template <class Start>
strata_status run(void* self, strata_request* req, strata_error* err, Start&& start) {
  if (req != nullptr) *req = nullptr;
  return sdk::guard(err, [&] {
    Instance& inst = instance(self);
    if (req == nullptr) {
      Request request;
      start(inst.collectives, request);
      if (inst.progress) inst.progress->drain();
      request.mpi_work(nullptr);
      request.complete(inst.comm);
      return;
    }
    auto request = std::make_unique<Request>();
    request->owner = &inst;
    start(inst.collectives, *request);
    if (inst.progress) {
      request->queued = inst.progress->submit(
          [work = std::move(request->mpi_work)] { work(nullptr); });
    } else {
      request->mpi_work(&request->mpi);
    }
    *req = reinterpret_cast<strata_request>(request.release());
    ++inst.live_requests;
  });
}

const char* hierarchy_note(const MpiComm& comm, const Config& config) {
  if (comm.hierarchical()) return ", hierarchical allreduce";
  return config.hierarchical ? ", hierarchical allreduce off (one host)" : "";
}

strata_status create(const strata_plugin_create_args* args, void** self, strata_error* err) {
  return sdk::guard(err, [&] {
    if (self == nullptr) invalid("create: self is NULL; expected where to store the instance");
    *self = nullptr;
    const sdk::CreateArgs create = sdk::read_create_args(args);
    const Config config = parse_config(create.config_json);
    auto inst = std::make_unique<Instance>(create.host, config);
    inst->host.log(STRATA_LOG_INFO,
                   "allreduce-mpi: rank %d of %d (local %d of %d), chunk_bytes %llu, "
                   "arrival_gate %s, %s%s; %s",
                   inst->comm.rank(), inst->comm.size(), inst->comm.local_rank(),
                   inst->comm.local_size(), static_cast<unsigned long long>(config.chunk_bytes),
                   config.arrival_gate ? "on" : "off", inst->shm.summary.c_str(),
                   hierarchy_note(inst->comm, config), inst->cuda.note.c_str());
    *self = inst.release();
  });
}

void destroy(void* self) {
  auto* inst = static_cast<Instance*>(self);
  if (inst == nullptr) return;
  if (inst->live_requests > 0) {
    inst->host.log(STRATA_LOG_WARN, "allreduce-mpi: destroyed with %d request(s) never waited",
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
    full.rank = inst.comm.rank();
    full.size = inst.comm.size();
    full.local_rank = inst.comm.local_rank();
    full.local_size = inst.comm.local_size();
    full.dtype_mask = (1u << STRATA_DTYPE_COUNT) - 1u;
    full.collective_mask =
        STRATA_COLL_BIT(STRATA_COLL_ALLREDUCE) | STRATA_COLL_BIT(STRATA_COLL_ALLGATHER) |
        STRATA_COLL_BIT(STRATA_COLL_ALLGATHERV) | STRATA_COLL_BIT(STRATA_COLL_REDUCE_SCATTER) |
        STRATA_COLL_BIT(STRATA_COLL_BROADCAST) | STRATA_COLL_BIT(STRATA_COLL_BARRIER);
    full.device_mask = device_mask(inst.cuda);
    full.nonblocking = 1;
    sdk::comm::write_comm_caps(caps, full);
  });
}

strata_status allreduce(void* self, const strata_coll_args* args, strata_request* req,
                        strata_error* err) {
  return run(self, req, err, [&](const Collectives& c, Request& r) {
    const strata_coll_args& a = sdk::comm::coll_args(args, "allreduce");
    c.allreduce(a.send, a.recv, a.op, r);
  });
}

strata_status allgather(void* self, const strata_coll_args* args, strata_request* req,
                        strata_error* err) {
  return run(self, req, err, [&](const Collectives& c, Request& r) {
    const strata_coll_args& a = sdk::comm::coll_args(args, "allgather");
    c.allgather(a.send, a.recv, r);
  });
}

strata_status allgatherv(void* self, const strata_coll_args* args, strata_request* req,
                         strata_error* err) {
  return run(self, req, err, [&](const Collectives& c, Request& r) {
    const strata_coll_args& a = sdk::comm::coll_args(args, "allgatherv");
    c.allgatherv(a.send, a.recv, a.recv_counts, a.displs, r);
  });
}

strata_status reduce_scatter(void* self, const strata_coll_args* args, strata_request* req,
                             strata_error* err) {
  return run(self, req, err, [&](const Collectives& c, Request& r) {
    const strata_coll_args& a = sdk::comm::coll_args(args, "reduce_scatter");
    c.reduce_scatter(a.send, a.recv, a.op, r);
  });
}

strata_status broadcast(void* self, const strata_coll_args* args, strata_request* req,
                        strata_error* err) {
  return run(self, req, err, [&](const Collectives& c, Request& r) {
    const strata_coll_args& a = sdk::comm::coll_args(args, "broadcast");
    c.broadcast(a.recv, a.root, r);
  });
}

strata_status barrier(void* self, const strata_coll_args* args, strata_request* req,
                      strata_error* err) {
  return run(self, req, err, [&](const Collectives& c, Request& r) {
    sdk::comm::coll_args(args, "barrier");
    c.barrier(r);
  });
}

strata_status wait(void* self, strata_request req, strata_error* err) {
  return sdk::guard(err, [&] {
    Instance& inst = instance(self);
    std::unique_ptr<Request> request(&owned_request(inst, req, "wait"));
    --inst.live_requests;
    request->complete(inst.comm);
  });
}

strata_status test(void* self, strata_request req, int32_t* done, strata_error* err) {
  return sdk::guard(err, [&] {
    Instance& inst = instance(self);
    Request& request = owned_request(inst, req, "test");
    if (done == nullptr) invalid("test: done is NULL");
    *done = request.mpi_done(inst.comm) ? 1 : 0;
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
}  // namespace strata::allreduce_mpi

STRATA_PLUGIN(strata::allreduce_mpi::kOps, "allreduce-mpi", "0.3.0",
              "collectives over Open MPI for host buffers (large allreduces sent in pieces), "
              "through shared memory when every rank runs on one host")
