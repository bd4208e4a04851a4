// The plugin's C boundary: its descriptor and strata_comm_ops table, the SDK's common boundary
// (strata/comm/ops_table.hpp) over what this plugin does differently.
#include "config.hpp"
#include "instance.hpp"

#include <strata/comm/ops_table.hpp>

#include <memory>

namespace strata::allreduce_nccl {
namespace {

// What this plugin's table does beyond the common boundary (strata/comm/ops_table.hpp).
struct Boundary {
  using Instance = allreduce_nccl::Instance;
  using Request = allreduce_nccl::Request;
  static constexpr const char* kName = "allreduce-nccl";
  // ABI 1.10: Collectives::alltoallv (grouped ncclSend/ncclRecv).
  static constexpr bool kAlltoallv = true;

  static std::unique_ptr<Instance> create(const sdk::CreateArgs& args) {
    const Config config = parse_config(args.config_json);  // before any device or peer
    auto inst = std::make_unique<Instance>(args.host, config);
    inst->host.log(STRATA_LOG_INFO,
                   "allreduce-nccl: rank %d of %d (local %d of %d) on cuda:%d of %d visible, "
                   "unique id through %s, timeout %g s, NCCL %d",
                   inst->comm->rank(), inst->comm->size(), inst->env.local_rank,
                   inst->env.local_size, inst->device.device, inst->device.visible, inst->bootstrap,
                   inst->config.timeout_seconds, NCCL_VERSION_CODE);
    return inst;
  }

  static strata_comm_caps caps(const Instance& inst) {
    // NCCL has a type for each dtype.
    strata_comm_caps caps = sdk::comm::every_collective_caps(
        inst.comm->rank(), inst.comm->size(), inst.env.local_rank, inst.env.local_size,
        STRATA_DEVICE_BIT(STRATA_DEVICE_CUDA));
    caps.collective_mask |= STRATA_COLL_BIT(STRATA_COLL_ALLTOALLV);
    caps.features |= STRATA_COMM_FEATURE_SPLIT;
    return caps;
  }

  // ABI 1.10: ncclCommSplit (Instance::split); nullptr for STRATA_COMM_SPLIT_NONE.
  static std::unique_ptr<Instance> split(Instance& inst, const strata_comm_split_args& a) {
    auto child = Instance::split(inst, a.color, a.key);
    if (child) {
      inst.host.log(STRATA_LOG_INFO,
                    "allreduce-nccl: %s: split color %d key %d: rank %d of %d (local %d of %d)",
                    inst.comm->who().c_str(), a.color, a.key, child->comm->rank(),
                    child->comm->size(), child->env.local_rank, child->env.local_size);
    }
    return child;
  }

  // The contract: the result is in recv on return.
  template <class Prepare>
  static void run_now(Instance& inst, Prepare&& prepare) {
    Request request;
    request.owner = &inst;
    prepare(*inst.collectives, request);
    inst.comm->wait_for(request.done, request.started, request.call);
  }

  template <class Prepare>
  static void start(Instance& inst, Request& request, Prepare&& prepare) {
    prepare(*inst.collectives, request);
  }

  static void wait(Instance& inst, Request& request) {
    inst.comm->wait_for(request.done, request.started, request.call);
  }
  static bool test(Instance& inst, Request& request) {
    return inst.comm->poll(request.done, request.started, request.call);
  }
};

constexpr strata_comm_ops kOps = sdk::comm::OpsTable<Boundary>::ops();

}  // namespace
}  // namespace strata::allreduce_nccl

// Floor 1.3: the host stream (cuda_stream, ABI 1.7) is read only where the runtime has it; an
// older runtime's host works on the legacy default stream, which is what a NULL stream means.
STRATA_PLUGIN(strata::allreduce_nccl::kOps, "allreduce-nccl", "0.1.0",
              "collectives over NCCL for CUDA buffers (alltoallv and split since ABI 1.10), on "
              "the plugin's own stream, ordered with the host's stream by events")
