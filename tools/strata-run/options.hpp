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
  std::vector<std::string> program;
};

// Returns false after CLI11 has printed help, the version or an error (exit_code then says which);
// throws
// UsageError for what CLI11 does not check itself.
bool parse_options(int argc, char** argv, Options& options, int& exit_code);

}  // namespace strata::run
