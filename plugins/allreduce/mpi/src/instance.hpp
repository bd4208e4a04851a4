// One plugin instance: what create() builds and destroy() tears down.
#pragma once

#include "collectives.hpp"
#include "config.hpp"
#include "mpi_comm.hpp"
#include "mpi_process.hpp"

#include <strata/plugin.hpp>

namespace strata::allreduce_mpi {

struct Instance {
  Instance(const strata_host_api* api, const Config& cfg)
      : host(api), config(cfg), collectives(comm, host, config) {}

  // Declaration order is construction order: MPI is up before the communicator is duplicated and
  // the communicator is freed before MPI may be finalised.
  sdk::Host host;
  Config config;
  MpiProcess process;
  MpiComm comm;
  Collectives collectives;
  int live_requests = 0;  // handed out and not yet waited
};

}  // namespace strata::allreduce_mpi
