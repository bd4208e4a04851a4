// One srun step per run on a Slurm allocation (gloo backend, no --launch-agent): srun starts every
// rank of the run on the host the placement gives it (SLURM_HOSTFILE with --distribution=arbitrary),
// a small script turns the task's SLURM_PROCID into the rank's variables, and srun's --label output
// and its "task N" errors are read back by launcher_process. A restart is a new step in the same
// allocation. Pure argv and script building, unit-tested.
#pragma once

#include "placement.hpp"

#include <string>
#include <vector>

namespace strata::run {

struct SrunStep {
  std::vector<std::string> argv;
  std::string hostfile;  // SLURM_HOSTFILE's text: rank r's host on line r + 1
  // What asks the step's ranks to stop (SIGTERM, as the gloo backend sends its own ranks): scancel
  // of the allocation's step named `name`, then a wait of at most 5 s for the step to end. srun
  // itself would pass a stop signal on as SIGKILL.
  std::vector<std::string> stop_argv;
};

// The srun command line of one run, its step named `name` (the caller writes `hostfile` and sets
// SLURM_HOSTFILE to it).
SrunStep srun_step(const Placement& placement, const std::vector<std::string>& program, const std::string& name);

// sh script run as `sh -c SCRIPT strata-rank PROGRAM ARGS...`: exports place_env's variables of the
// rank SLURM_PROCID names, then execs the program; a task beyond the placement fails, naming it.
std::string srun_rank_script(const Placement& placement);

}  // namespace strata::run
