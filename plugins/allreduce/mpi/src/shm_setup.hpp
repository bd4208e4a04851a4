// Setting up the shared-memory group (plugins/common/shm) at create(), over MPI: the group's
// set-up runs over this communicator (a SetupChannel), when every rank runs on this host.
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

}  // namespace strata::allreduce_mpi
