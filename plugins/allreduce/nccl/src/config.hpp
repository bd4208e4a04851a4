// The plugin's config object (the manifest's `comm.config`), validated before anything touches a
// device, MPI or the network, so that a bad key fails the same way on every machine.
#pragma once

#include <cstdint>

namespace strata::allreduce_nccl {

// How ranks learn the NCCL unique id that rank 0 makes.
enum class Bootstrap {
  kAuto,  // MPI when mpirun started the job (OMPI_COMM_WORLD_SIZE), else the TCP store
  kMpi,   // MPI_Bcast (MPI is initialised if nobody did)
  kTcp,   // rank 0 serves the id at MASTER_ADDR:MASTER_PORT, proven with STRATA_JOB_SECRET
};

struct Config {
  // The CUDA ordinal to use; -1: the local rank's (local_rank, among the visible devices).
  int device;
  Bootstrap bootstrap;
  // Longest a communicator init, the id exchange or one collective's wait may take before the
  // communicator is aborted and the call fails naming the collective and rank. Generous by default:
  // a first collective may wait for a slow peer's start-up (data loading, compilation).
  double timeout_seconds;
  // More local ranks than visible devices: fail (false), or put ranks on local_rank % devices.
  // NCCL refuses two ranks of one communicator on one device (its "Duplicate GPU" check), so
  // sharing gives each rank its own NCCL host identity (NCCL_HOSTID) and the ranks sharing a
  // device talk through NCCL's network transport: correct, slow, for tests on one GPU.
  bool share_device;
};

// Parses and validates `config_json` (NULL or "" mean {}). Throws sdk::Error with
// STRATA_ERR_INVALID_ARGUMENT naming the offending key.
Config parse_config(const char* config_json);

const char* bootstrap_name(Bootstrap bootstrap);

}  // namespace strata::allreduce_nccl
