// From parsed options to a running job: the hosts, the placement and the job's variables (shared
// by both backends), then the backend itself.
#pragma once

#include "options.hpp"

namespace strata::run {

// Returns strata-run's exit status once the job has ended (the first failing rank's, or mpirun's).
int launch(const Options& options);

}  // namespace strata::run
