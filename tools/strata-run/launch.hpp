// From parsed options to a running job: the hosts, the placement and the job's variables (shared
// by both backends), then the backend itself; with --max-restarts, again after each failure
// (restart_loop.cpp).
#pragma once

#include "hosts.hpp"
#include "job_outcome.hpp"
#include "options.hpp"
#include "placement.hpp"

#include <vector>

namespace strata::run {

// Returns strata-run's exit status once the job has ended (the first failing rank's, or mpirun's)
// and, with --max-restarts, no restart is left or possible.
int launch(const Options& options);

// The hosts as the options give them now (-H, the hostfile read again, the Slurm allocation's, or
// this machine with `np` slots).
std::vector<Host> hosts_of(const Options& options, int np);

// Inside a Slurm allocation with no -H or --hostfile: the job runs on the allocation (slurm.hpp).
bool on_slurm_allocation(const Options& options);

// What starts a rank on another host (gloo backend): --launch-agent, else srun on a Slurm
// allocation, else ssh.
std::string launch_agent_of(const Options& options);

// Which run of the job this is, for the ranks' STRATA_RESTART_COUNT and friends.
struct RunNumber {
  int restart_count = 0;
  int previous_world_size = 0;
  int first_world_size = 0;  // 0: not exported (no --max-restarts)
};

// One run of the job, placed, to its end.
JobOutcome run_once(const Options& options, const Placement& placement, const RunNumber& run);

}  // namespace strata::run
