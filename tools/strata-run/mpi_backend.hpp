// The mpi backend: strata-run checks the hosts and slots, puts the job's variables in its own
// environment and runs mpirun (launcher_process.hpp), which starts the ranks (through its own
// ssh/agent) and forwards the variables named with -x. Only names go on mpirun's command line,
// never the secret.
#pragma once

#include "hosts.hpp"

#include <optional>
#include <string>
#include <vector>

namespace strata::run {

struct MpiJob {
  std::string mpirun = "mpirun";
  bool as_root = false;  // uid 0: Open MPI refuses to run without --allow-run-as-root
  int np = 1;
  std::vector<Host> hosts;
  std::optional<std::string> network_interface;
  std::optional<std::string> launch_agent;
  std::vector<std::string> exported_names;  // passed as -x NAME, in order
  std::vector<std::string> program;
};

// The full argv, mpirun first. Pure, so the unit tests pin it. Always --tag-output: the tags are
// how strata-run tells the ranks' output apart (mpi_output.hpp), with or without "[R] " prefixes.
std::vector<std::string> mpirun_argv(const MpiJob& job);

}  // namespace strata::run
