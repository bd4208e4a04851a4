// Where this process sits in the job, as its launcher wrote it into the environment: mpirun
// (OMPI_COMM_WORLD_*) or strata-run (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_SIZE); neither: a
// single process. Read before any device is touched: the local rank picks the device.
#pragma once

namespace strata::allreduce_nccl {

struct LaunchEnv {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  bool from_mpirun = false;      // OMPI_COMM_WORLD_SIZE was set
  bool from_strata_run = false;  // WORLD_SIZE was set (and OMPI_COMM_WORLD_SIZE was not)
};

// Throws sdk::Error (STRATA_ERR_INVALID_ARGUMENT) naming a missing or malformed variable.
LaunchEnv read_launch_env();

}  // namespace strata::allreduce_nccl
