// The mpi backend's process: strata-run runs mpirun as its child (not exec), so that it can turn
// mpirun's --tag-output stream into the same whole "[R] line" lines as the gloo backend prints.
#pragma once

#include <string>
#include <vector>

namespace strata::run {

// Runs mpirun (argv[0], found in PATH, with strata-run's environment and stdin) to the end and
// returns strata-run's exit status: mpirun's own, or 128 + signal when a signal ended it.
// SIGINT/SIGTERM/SIGHUP to strata-run are passed on to mpirun, which ends the ranks; if
// strata-run dies, mpirun gets SIGTERM. rank_prefix false: the ranks' lines without "[R] ".
int run_mpirun(const std::vector<std::string>& argv, bool rank_prefix);

}  // namespace strata::run
