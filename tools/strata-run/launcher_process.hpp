// The process of a launcher that starts every rank itself: mpirun (the mpi backend) or srun (the
// gloo backend on a Slurm allocation). strata-run runs it as its child (not exec), so that it can
// turn the launcher's marked output (rank_lines.hpp) into the same whole "[R] line" lines as the
// gloo backend prints, and read from the launcher's own lines which rank failed first.
#pragma once

#include "environment.hpp"
#include "job_outcome.hpp"

#include <string>
#include <vector>

namespace strata::run {

enum class Launcher { mpirun, srun };

// Runs the launcher (argv[0], found in PATH, with strata-run's environment plus `env`, and its
// stdin) to the end and returns strata-run's exit status: the launcher's own, or 128 + signal when
// a signal ended it, with the rank that failed first as the launcher names it.
// The launcher runs in strata-run's process group, so from a terminal it is in the foreground group
// as it was when strata-run exec'd it: Open MPI 4.1 reads the keyboard for rank 0 only then
// (orte_iof_hnp_stdin_check), and Ctrl-C/Ctrl-Z reach the launcher directly. SIGINT/SIGTERM/SIGHUP
// that a process sent strata-run alone (kill(), a scheduler) are passed on to it, and it ends the
// ranks; the terminal's are not, it has them already. If strata-run dies, the launcher gets
// SIGTERM. rank_prefix false: the ranks' lines without "[R] ".
// srun differs: it runs in a process group of its own with no stdin, and every stop signal
// strata-run gets (a terminal's too) runs `stop_argv` (which sends the step's ranks SIGTERM through
// Slurm), then SIGTERM to srun 3 s later; strata-run then exits with 128 + that signal. After a
// rank failed, the exit status is that rank's code (srun's own is the highest of every task's).
JobOutcome run_launcher(Launcher launcher, const std::vector<std::string>& argv, const EnvVars& env,
                        bool rank_prefix, const std::vector<std::string>& stop_argv = {});

}  // namespace strata::run
