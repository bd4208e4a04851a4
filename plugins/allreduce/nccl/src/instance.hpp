// One plugin instance: what create() builds and destroy() tears down, in this order: the config
// (already parsed), the launcher's environment, the device, the unique id's bootstrap, the
// communicator, the stream, barrier's scratch and the collectives over them. split() (ABI 1.10)
// builds a child instance of the same kind over a communicator from ncclCommSplit.
#pragma once

#include "collectives.hpp"
#include "config.hpp"
#include "device_choice.hpp"
#include "launch_env.hpp"
#include "mpi_bootstrap.hpp"
#include "nccl_comm.hpp"
#include "stream_order.hpp"

#include <strata/plugin.hpp>

#include <memory>

namespace strata::allreduce_nccl {

struct Instance {
  // Throws sdk::Error naming the rank and what failed (no device, a bootstrap timeout, NCCL).
  Instance(const strata_host_api* api, const Config& cfg);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  // Collective over `parent`'s ranks (NcclComm::split): the instance of the ranks that passed
  // the same color (>= 0), ranked by key, on the parent's device; nullptr for color < 0. Its
  // members then allgather their host names over the new communicator for local_rank and
  // local_size. Throws sdk::Error (STRATA_ERR_COMM, or STRATA_ERR_OUT_OF_MEMORY).
  static std::unique_ptr<Instance> split(Instance& parent, int color, int key);

  sdk::Host host;
  Config config;
  // The launcher's environment; in a split child, its place in the sub-group instead (rank and
  // size as the communicator's, local_rank/local_size among its members on this host).
  LaunchEnv env;
  DeviceChoice device;
  const char* bootstrap = "none";   // how the unique id travelled: "mpi", "tcp", "none" or
                                    // "split" (a child: ncclCommSplit needs no id)
  std::unique_ptr<MpiSession> mpi;  // kept up until destroy: MPI_Finalize may run only once
                                    // (the parent's only: a child holds none)
  std::unique_ptr<NcclComm> comm;
  // Shared by a parent and every instance split from it, so that all their collectives run on
  // one stream, one after another in the order the host issued them. NCCL does not promise that
  // collectives of different communicators in flight together on one device all progress (its
  // kernels wait for their peers, and two may not fit on the device at once: "Using multiple NCCL
  // communicators concurrently" in NCCL's guide), so separate streams could deadlock where ranks
  // issue the same calls; serialised, whatever would finish as blocking calls finishes. The cost:
  // collectives of different sub-groups (e.g. tensor- and data-parallel) do not overlap. Shared
  // ownership also keeps the stream alive for a child destroyed after its parent.
  std::shared_ptr<StreamOrder> order;
  std::unique_ptr<DeviceScratch> scratch;
  std::unique_ptr<Collectives> collectives;
  int live_requests = 0;  // handed out and not yet waited

 private:
  // A split child over `child_comm`, sharing `parent`'s stream; env.local_rank/local_size are
  // left at 0 and 1 for split() to fill.
  Instance(const Instance& parent, std::unique_ptr<NcclComm> child_comm);
};

}  // namespace strata::allreduce_nccl
