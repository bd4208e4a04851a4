// The command line. Two modes: the one a person runs (LIBRARY [--config] [-np] [--junit] ...),
// and --worker, which the parent runs once per rank of each job it starts (never by hand).
#pragma once

#include <optional>
#include <string>

namespace strata::plugin_check {

struct Options {
  std::string library;      // as given
  std::string config_json = "{}";
  bool config_given = false;
  int max_ranks = 4;        // -np: the multi-rank strata run at world sizes 1..max_ranks
  std::string junit_path;   // empty: no report
  std::string backend = "mpi";  // strata-run's backend for the multi-rank jobs
  int check_timeout_s = 120;    // a check still running after this is failed (a hang)
  std::string work_dir;     // where jobs write their results; empty: a fresh temporary folder
  bool keep_work_dir = false;
  // --worker: run one stratum's checks in this process, writing to <worker_dir>/rank-<R>.txt.
  std::optional<std::string> worker_dir;
  std::string worker_stratum;
};

// Parses argv. Prints help and exits 0 for --help; throws std::invalid_argument with a message
// naming the option and what was expected for bad input.
Options parse_options(int argc, char** argv);

}  // namespace strata::plugin_check
