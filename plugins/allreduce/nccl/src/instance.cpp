#include "instance.hpp"

#include "cuda_errors.hpp"
#include "tcp_bootstrap.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

namespace strata::allreduce_nccl {
namespace {

// NCCL refuses two ranks of one communicator on one device ("Duplicate GPU detected": same host
// hash and bus id). Each rank that shares a device gets a host identity of its own, so NCCL sees
// the ranks on different hosts and connects them through its network transport.
void give_own_nccl_host_id(const sdk::Host& host, int rank) {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  const std::string id = std::string(name) + "-strata-rank-" + std::to_string(rank);
  setenv("NCCL_HOSTID", id.c_str(), 1);
  host.log(STRATA_LOG_WARN,
           "allreduce-nccl: rank %d shares its CUDA device with another local rank (share_device): "
           "NCCL_HOSTID=%s, so NCCL connects the ranks through its network transport (slow)",
           rank, id.c_str());
}

const char* choose_bootstrap(Bootstrap configured, const LaunchEnv& env) {
  switch (configured) {
    case Bootstrap::kMpi:
      return "mpi";
    case Bootstrap::kTcp:
      return env.size > 1 ? "tcp" : "none";
    case Bootstrap::kAuto:
      break;
  }
  if (env.from_mpirun) return "mpi";
  return env.size > 1 ? "tcp" : "none";
}

}  // namespace

Instance::Instance(const strata_host_api* api, const Config& cfg)
    : host(api), config(cfg), env(read_launch_env()), device(choose_device(env, config)) {
  if (device.shared) give_own_nccl_host_id(host, env.rank);
  bootstrap = choose_bootstrap(config.bootstrap, env);
  int rank = env.rank;
  int size = env.size;
  if (std::string(bootstrap) == "mpi") {
    mpi = std::make_unique<MpiSession>();
    if (env.from_mpirun && (mpi->rank() != env.rank || mpi->size() != env.size)) {
      sdk::fail(STRATA_ERR_COMM, "allreduce-nccl: " + who(env) + ": MPI_COMM_WORLD has rank " +
                                     std::to_string(mpi->rank()) + " of " +
                                     std::to_string(mpi->size()) +
                                     ", but mpirun's environment says rank " +
                                     std::to_string(env.rank) + " of " + std::to_string(env.size));
    }
    rank = mpi->rank();
    size = mpi->size();
  }
  const auto timeout =
      std::chrono::milliseconds(static_cast<int64_t>(config.timeout_seconds * 1000));
  check_cuda(cudaSetDevice(device.device), "allreduce-nccl: " + who(env) + ": cudaSetDevice(" +
                                               std::to_string(device.device) + ")");
  ncclUniqueId id{};
  if (rank == 0) {
    const ncclResult_t made = ncclGetUniqueId(&id);
    if (made != ncclSuccess) {
      sdk::fail(STRATA_ERR_COMM,
                "allreduce-nccl: " + who(env) + ": ncclGetUniqueId: " + ncclGetErrorString(made));
    }
  }
  if (mpi) mpi->broadcast(id);
  if (std::string(bootstrap) == "tcp")
    exchange_id_over_tcp(id, rank, size, timeout, read_tcp_rendezvous());
  comm = std::make_unique<NcclComm>(id, rank, size, device.device, timeout, who(env));
  order = std::make_unique<StreamOrder>(host, device.device);
  scratch = std::make_unique<DeviceScratch>(device.device);
  collectives = std::make_unique<Collectives>(*comm, *order, *scratch);
}

// The communicator goes before the stream its work ran on, and before MPI may be finalised.
Instance::~Instance() {
  collectives.reset();
  comm.reset();
  scratch.reset();
  order.reset();
  mpi.reset();
}

}  // namespace strata::allreduce_nccl
