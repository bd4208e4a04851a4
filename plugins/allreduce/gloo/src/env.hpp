// The job's environment, as the launcher (strata-run, or mpirun) sets it, validated. Every missing
// or malformed variable fails create() with STRATA_ERR_INVALID_ARGUMENT naming the variable and
// what was expected.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace strata::allreduce_gloo {

using Secret = std::array<unsigned char, 32>;
// Names this plugin in the errors of the SDK's job-secret proofs (plugins/common, strata_common/job_secret.hpp).
inline constexpr char kSecretErrorPrefix[] = "gloo";

struct Env {
  int rank = 0;
  int size = 1;
  std::string master_addr;  // as given (for messages)
  std::string master_ip;    // MASTER_ADDR resolved to dotted IPv4
  uint16_t master_port = 0;
  Secret secret{};
  // This rank's IPv4 address for the Gloo device and (rank 0) the store: never 0.0.0.0.
  std::string bind_ip;
  // This host's identity for grouping ranks by host: hostname + boot id, or CROSS_RANK when set.
  std::string host_id;
};

// Reads RANK/WORLD_SIZE (else OMPI_COMM_WORLD_*, else srun's SLURM_PROCID/SLURM_STEP_NUM_TASKS),
// MASTER_ADDR and MASTER_PORT (under srun, when unset: the step's first node and a port from the job
// and step ids), STRATA_JOB_SECRET and STRATA_NETWORK_INTERFACE. LOCAL_RANK/LOCAL_SIZE are not read: the plugin derives them from the
// host identities every rank publishes, which also holds for uneven slots per host.
Env read_env();

}  // namespace strata::allreduce_gloo
