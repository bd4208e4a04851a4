#include "instance.hpp"

#include "cuda_errors.hpp"
#include "tcp_bootstrap.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

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

// Device memory for split's host-name exchange, freed on every path.
class DeviceBytes {
 public:
  DeviceBytes(size_t bytes, int device) {
    if (cudaMalloc(&data_, bytes) != cudaSuccess) {
      cudaGetLastError();
      data_ = nullptr;
      sdk::fail(STRATA_ERR_OUT_OF_MEMORY, "allreduce-nccl: split: cannot allocate " +
                                              std::to_string(bytes) + " bytes on cuda:" +
                                              std::to_string(device));
    }
  }
  ~DeviceBytes() { cudaFree(data_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

// One fixed-size, NUL-padded host name per rank (Linux names are at most 64 bytes).
constexpr size_t kHostNameBytes = 256;

// A u8 buffer of `count` bytes of device memory on cuda:`device`.
strata_buffer device_bytes(void* data, uint64_t count, int device) {
  strata_buffer buffer{};
  buffer.struct_size = sizeof(buffer);
  buffer.data = data;
  buffer.count = count;
  buffer.dtype = STRATA_U8;
  buffer.device.type = STRATA_DEVICE_CUDA;
  buffer.device.index = device;
  return buffer;
}

// local_rank and local_size of `child` among its members on this host, the host being what
// gethostname says (as for the launchers' LOCAL_RANK; NCCL_HOSTID, which share_device sets per
// rank, is NCCL's business only): the members allgather their names over the child's
// communicator, on its stream, and this rank counts the members named as it is.
void place_on_host(Instance& child) {
  char name[kHostNameBytes] = {};
  gethostname(name, sizeof name - 1);
  const int device = child.device.device;
  const auto size = static_cast<size_t>(child.comm->size());
  const DeviceBytes mine(kHostNameBytes, device);
  const DeviceBytes all(kHostNameBytes * size, device);
  // On the collective's stream, so the allgather reads the copy whatever the host's stream is.
  check_cuda(cudaMemcpyAsync(mine.get(), name, kHostNameBytes, cudaMemcpyHostToDevice,
                             child.order->stream()),
             "allreduce-nccl: split: cudaMemcpyAsync of the host name");
  const strata_buffer send = device_bytes(mine.get(), kHostNameBytes, device);
  const strata_buffer recv = device_bytes(all.get(), kHostNameBytes * size, device);
  strata_coll_args args{};
  args.struct_size = sizeof(args);
  args.send = &send;
  args.recv = &recv;
  Request request;
  request.owner = &child;
  child.collectives->allgather(args, request);
  child.comm->wait_for(request.done, request.started, request.call);
  std::vector<char> names(kHostNameBytes * size);
  // The allgather has completed (its event), so this synchronous copy only reads its result.
  check_cuda(cudaMemcpy(names.data(), all.get(), names.size(), cudaMemcpyDeviceToHost),
             "allreduce-nccl: split: cudaMemcpy of the members' host names");
  const int rank = child.comm->rank();
  int local_rank = 0;
  int local_size = 0;
  for (size_t member = 0; member < size; ++member) {
    if (std::memcmp(names.data() + member * kHostNameBytes, name, kHostNameBytes) != 0) continue;
    ++local_size;
    if (member < static_cast<size_t>(rank)) ++local_rank;
  }
  child.env.local_rank = local_rank;
  child.env.local_size = local_size;
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
  order = std::make_shared<StreamOrder>(host, device.device);
  scratch = std::make_unique<DeviceScratch>(device.device);
  collectives = std::make_unique<Collectives>(*comm, *order, *scratch);
}

Instance::Instance(const Instance& parent, std::unique_ptr<NcclComm> child_comm)
    : host(parent.host),
      config(parent.config),
      env(parent.env),
      device(parent.device),
      bootstrap("split"),
      comm(std::move(child_comm)),
      order(parent.order) {
  env.rank = comm->rank();
  env.size = comm->size();
  env.local_rank = 0;
  env.local_size = 1;
  scratch = std::make_unique<DeviceScratch>(device.device);
  collectives = std::make_unique<Collectives>(*comm, *order, *scratch);
}

std::unique_ptr<Instance> Instance::split(Instance& parent, int color, int key) {
  std::unique_ptr<NcclComm> child_comm = parent.comm->split(color, key);
  if (!child_comm) return nullptr;
  std::unique_ptr<Instance> child(new Instance(parent, std::move(child_comm)));
  place_on_host(*child);
  return child;
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
