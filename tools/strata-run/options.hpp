// strata-run's command line: `strata-run [options] -- PROGRAM [ARGS...]`, parsed with CLI11.
#pragma once

#include <string>
#include <vector>

namespace strata::run {

struct Options {
  int np = 0;  // 0: every slot
  std::string host_list;
  std::string hostfile;
  std::string backend = "mpi";
  std::string manifest;
  std::vector<std::string> exports;  // -x
  std::string network_interface;
  std::string launch_agent;  // empty: ssh (default_launch_agent)
  int master_port = 0;       // 0: chosen (see master_port in main)
  int connect_timeout = 30;
  bool verbose = false;
  bool rank_prefix = true;  // "[R] " before each line of rank R (--no-rank-prefix: false)
  std::string mpirun = "mpirun";
  // Elastic restarts (restarts.hpp): 0 restarts is a job that ends at its first failure.
  int max_restarts = 0;
  int min_np = 1;
  int max_np = 0;  // 0: no limit but the slots
  std::string checkpoint_dir;  // STRATA_CHECKPOINT_DIR for the ranks; required with restarts
  int startup_seconds = 10;    // a failure this soon after a start drops the failed rank's host
  std::vector<std::string> program;
};

// Returns false after CLI11 has printed help, the version or an error (exit_code then says which);
// throws
// UsageError for what CLI11 does not check itself.
bool parse_options(int argc, char** argv, Options& options, int& exit_code);

}  // namespace strata::run
