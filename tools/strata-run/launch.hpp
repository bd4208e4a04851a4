// From parsed options to a running job: the hosts, the placement and the job's variables (shared
// by both backends), then the backend itself.
#pragma once

#include "options.hpp"

namespace strata::run {

// Returns strata-run's exit status (the mpi backend returns only when mpirun could not start).
int launch(const Options& options);

}  // namespace strata::run
