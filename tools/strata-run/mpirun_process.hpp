// The mpi backend's process: strata-run runs mpirun as its child (not exec), so that it can turn
// mpirun's --tag-output stream into the same whole "[R] line" lines as the gloo backend prints.
#pragma once

#include "job_outcome.hpp"

#include <string>
#include <vector>

namespace strata::run {

// Runs mpirun (argv[0], found in PATH, with strata-run's environment and stdin) to the end and
// returns strata-run's exit status: mpirun's own, or 128 + signal when a signal ended it, with the
// rank that failed first as mpirun's banner names it.
// mpirun runs in strata-run's process group, so from a terminal it is in the foreground group as
// it was when strata-run exec'd it: Open MPI 4.1 reads the keyboard for rank 0 only then
// (orte_iof_hnp_stdin_check), and Ctrl-C/Ctrl-Z reach mpirun directly. SIGINT/SIGTERM/SIGHUP that
// a process sent strata-run alone (kill(), a scheduler) are passed on to mpirun, which ends the
// ranks; the terminal's are not, mpirun has them already. If strata-run dies, mpirun gets
// SIGTERM. rank_prefix false: the ranks' lines without "[R] ".
JobOutcome run_mpirun(const std::vector<std::string>& argv, bool rank_prefix);

}  // namespace strata::run
