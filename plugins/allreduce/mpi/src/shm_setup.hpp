// Setting up the shared-memory group (plugins/common/shm) at create(), over MPI (a SetupChannel):
// over the job's communicator when every rank runs on this host, or over this host's ranks for the
// two-level allreduce across hosts.
#pragma once

#include "config.hpp"
#include "mpi_comm.hpp"
#include <strata_common/shm_setup.hpp>

#include <strata/plugin.hpp>

namespace strata::allreduce_mpi {

// The shared-memory group is plugins/common/shm's.
namespace shm = common::shm;

// Throws sdk::Error (STRATA_ERR_COMM) only when MPI itself fails; a segment that cannot be made
// or mapped turns the path off (logged as a warning on the rank that saw why).
shm::Setup set_up_shm(const MpiComm& comm, const Config& config, const sdk::Host& host);

// The group of this host's ranks (over comm.node()) for the two-level allreduce, when
// comm.two_level(); otherwise none (and an empty summary). Collective over the communicator.
shm::Setup set_up_host_shm(const MpiComm& comm, const Config& config, const sdk::Host& host);

}  // namespace strata::allreduce_mpi
