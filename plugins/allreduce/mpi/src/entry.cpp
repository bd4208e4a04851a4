// The plugin's C boundary: its descriptor and strata_comm_ops table, the SDK's common boundary
// (strata/comm/ops_table.hpp) over what this plugin does differently.
#include "instance.hpp"

#include <strata/comm/ops_table.hpp>

#include <memory>
#include <string>
#include <utility>

namespace strata::allreduce_mpi {
namespace {

std::string hierarchy_note(const Instance& inst) {
  const MpiComm& comm = inst.comm;
  const bool automatic = inst.config.hierarchical == Config::Hierarchy::automatic;
  if (comm.hierarchical()) {
    if (inst.host_shm.group) {
      return ", hierarchical allreduce (" + std::string(automatic ? "auto: " : "") +
             "two-level: within hosts " + inst.host_shm.summary + ", across " +
             std::to_string(comm.hosts()) + " hosts by every local rank)";
    }
    if (automatic) {  // the host's shared-memory group could not be set up: flat
      return ", hierarchical allreduce off (auto: within hosts " + inst.host_shm.summary + ")";
    }
    if (comm.two_level()) {
      return ", hierarchical allreduce (through each host's first rank: within hosts " +
             inst.host_shm.summary + ")";
    }
    return ", hierarchical allreduce (through each host's first rank: the hosts hold different "
           "numbers of ranks)";
  }
  if (comm.local_size() == comm.size()) {
    return inst.config.hierarchical == Config::Hierarchy::on
               ? ", hierarchical allreduce off (one host)"
               : "";
  }
  if (!automatic) return "";
  return ", hierarchical allreduce off (auto: " + comm.declined() + ")";
}

// What this plugin's table does beyond the common boundary (strata/comm/ops_table.hpp).
struct Boundary {
  using Instance = allreduce_mpi::Instance;
  using Request = allreduce_mpi::Request;
  static constexpr const char* kName = "allreduce-mpi";

  static std::unique_ptr<Instance> create(const sdk::CreateArgs& args) {
    const Config config = parse_config(args.config_json);
    auto inst = std::make_unique<Instance>(args.host, config);
    inst->host.log(STRATA_LOG_INFO,
                   "allreduce-mpi: rank %d of %d (local %d of %d), chunk_bytes %llu, "
                   "arrival_gate %s, %s%s; %s",
                   inst->comm.rank(), inst->comm.size(), inst->comm.local_rank(),
                   inst->comm.local_size(), static_cast<unsigned long long>(config.chunk_bytes),
                   config.arrival_gate ? "on" : "off", inst->shm.summary.c_str(),
                   hierarchy_note(*inst).c_str(), inst->cuda.note.c_str());
    return inst;
  }

  static strata_comm_caps caps(const Instance& inst) {
    const MpiComm& c = inst.comm;
    strata_comm_caps caps = sdk::comm::every_collective_caps(
        c.rank(), c.size(), c.local_rank(), c.local_size(), device_mask(inst.cuda));
    caps.collective_mask |= STRATA_COLL_BIT(STRATA_COLL_ALLTOALLV);
    caps.features |= STRATA_COMM_FEATURE_SPLIT;
    return caps;
  }

  // ABI 1.10: the table's alltoallv calls Collectives::alltoallv.
  static constexpr bool kAlltoallv = true;

  // MPI_Comm_split of the instance's communicator; the child shares the progress thread and MPI.
  // Blocking and collective over the parent: run on this thread once the progress thread has
  // finished every queued collective (of any instance), as run_now does.
  static std::unique_ptr<Instance> split(Instance& inst, const strata_comm_split_args& a) {
    if (inst.progress) inst.progress->drain();
    const bool none = a.color == STRATA_COMM_SPLIT_NONE;
    const MPI_Comm child = inst.comm.split(none ? MPI_UNDEFINED : a.color, a.key);
    if (child == MPI_COMM_NULL) {
      inst.host.log(STRATA_LOG_INFO, "allreduce-mpi: split: rank %d joins no sub-group (color none)",
                    inst.comm.rank());
      return nullptr;
    }
    Config config = inst.config;
    config.hierarchical = Config::Hierarchy::off;  // sub-groups are flat
    auto sub = std::make_unique<Instance>(inst.host.raw(), config, child);
    sub->host.log(STRATA_LOG_INFO,
                  "allreduce-mpi: split: rank %d of %d in color %d (key %d, parent rank %d of %d, "
                  "local %d of %d), %s",
                  sub->comm.rank(), sub->comm.size(), a.color, a.key, inst.comm.rank(),
                  inst.comm.size(), sub->comm.local_rank(), sub->comm.local_size(),
                  sub->shm.summary.c_str());
    return sub;
  }

  // On this thread, but after the queued non-blocking work (collective order).
  template <class Prepare>
  static void run_now(Instance& inst, Prepare&& prepare) {
    Request request;
    prepare(inst.collectives, request);
    if (inst.progress) inst.progress->drain();
    request.mpi_work(nullptr);
    request.complete(inst.comm);
  }

  // The MPI work is queued on the progress thread as blocking calls, or started as MPI_I* calls
  // where MPI's thread support does not allow that.
  template <class Prepare>
  static void start(Instance& inst, Request& request, Prepare&& prepare) {
    prepare(inst.collectives, request);
    if (inst.progress) {
      request.queued =
          inst.progress->submit([work = std::move(request.mpi_work)] { work(nullptr); });
    } else {
      request.mpi_work(&request.mpi);
    }
  }

  static void wait(Instance& inst, Request& request) { request.complete(inst.comm); }
  static bool test(Instance& inst, Request& request) { return request.mpi_done(inst.comm); }
};

constexpr strata_comm_ops kOps = sdk::comm::OpsTable<Boundary>::ops();

}  // namespace
}  // namespace strata::allreduce_mpi

STRATA_PLUGIN(strata::allreduce_mpi::kOps, "allreduce-mpi", "0.3.0",
              "collectives over Open MPI for host buffers (large allreduces sent in pieces), "
              "through shared memory when every rank runs on one host")
