// The environment each rank gets (the names torchrun and horovodrun use), and the -x variables.
// Pure functions: the unit tests check every value.
#pragma once

#include "placement.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata::run {

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// What every rank of a job shares.
struct JobEnv {
  std::string master_addr;
  int master_port = 0;
  std::string secret;                            // STRATA_JOB_SECRET
  std::optional<std::string> network_interface;  // STRATA_NETWORK_INTERFACE
  std::optional<std::string> manifest;           // STRATA_MANIFEST, an absolute path
  std::optional<std::string> comm_library;       // STRATA_COMM_LIBRARY (gloo backend)
  std::optional<std::string> library;            // STRATA_LIBRARY: the libstrata a host that
                                                 // loads it at run time (Python) should load
  EnvVars exports;                               // the -x variables, resolved
  // --max-restarts: which run of the job this is (0: the first) and the world sizes of the one
  // before (0: none) and of the first; the checkpoint folder (--checkpoint-dir, absolute).
  int restart_count = 0;                         // STRATA_RESTART_COUNT
  int previous_world_size = 0;                   // STRATA_PREVIOUS_WORLD_SIZE
  int first_world_size = 0;                      // STRATA_FIRST_WORLD_SIZE (0: not set)
  std::optional<std::string> checkpoint_dir;     // STRATA_CHECKPOINT_DIR
};

// MASTER_ADDR: 127.0.0.1 when every host used is local (hosts_local[i] for placement.hosts[i]);
// otherwise the first host as given (it must resolve on every host), except that a first host
// that is this machine, given as localhost or 127.*, would send remote ranks to their own
// loopback: then this machine's name, `this_host` (gethostname).
std::string master_addr(const Placement& placement, const std::vector<bool>& hosts_local,
                        const std::string& this_host);

// The variables every rank gets: MASTER_*, STRATA_JOB_SECRET, STRATA_NETWORK_INTERFACE,
// STRATA_MANIFEST, STRATA_COMM_LIBRARY, STRATA_LIBRARY, STRATA_RESTART_COUNT,
// STRATA_PREVIOUS_WORLD_SIZE, STRATA_FIRST_WORLD_SIZE, STRATA_CHECKPOINT_DIR and the -x variables (these last, so a -x can override nothing of ours: a -x
// naming one of ours is rejected by resolve_exports).
EnvVars job_env(const JobEnv& job);
// Where one rank runs: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_SIZE, CROSS_RANK, CROSS_SIZE.
EnvVars place_env(const Placement& placement, int rank);
// place_env then job_env: everything one rank gets.
EnvVars rank_env(const Placement& placement, int rank, const JobEnv& job);

// -x VAR (the value from `lookup`, usually getenv) or -x VAR=VALUE. Throws UsageError for a bad
// name, an unset VAR, or a name strata-run sets itself.
EnvVars resolve_exports(const std::vector<std::string>& specs,
                        const char* (*lookup)(const char*));

// `base` ("NAME=VALUE" strings, like environ) with `vars` set over it: the envp of a local rank.
std::vector<std::string> merge_environment(const char* const* base, const EnvVars& vars);

}  // namespace strata::run
