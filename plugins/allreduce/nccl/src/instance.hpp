// One plugin instance: what create() builds and destroy() tears down, in this order: the config
// (already parsed), the launcher's environment, the device, the unique id's bootstrap, the
// communicator, the stream, barrier's scratch and the collectives over them.
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

  sdk::Host host;
  Config config;
  LaunchEnv env;
  DeviceChoice device;
  const char* bootstrap = "none";   // how the unique id travelled: "mpi", "tcp" or "none"
  std::unique_ptr<MpiSession> mpi;  // kept up until destroy: MPI_Finalize may run only once
  std::unique_ptr<NcclComm> comm;
  std::unique_ptr<StreamOrder> order;
  std::unique_ptr<DeviceScratch> scratch;
  std::unique_ptr<Collectives> collectives;
  int live_requests = 0;  // handed out and not yet waited
};

}  // namespace strata::allreduce_nccl
