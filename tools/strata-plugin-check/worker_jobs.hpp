// Starting a worker job and waiting for it: the job runs in its own process group with its
// output in a log file, and is stopped (SIGTERM, SIGKILL 3 s later) when no rank has written a
// result line for `idle_limit` — hangs inside a check are the workers' own watchdog's business
// (file_recorder.hpp); this catches the ones outside checks (start-up, exit).
#pragma once

#include "job_results.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace strata::plugin_check {

struct JobSpec {
  std::vector<std::string> argv;  // argv[0] is a path
  std::string results_dir;        // watched for progress; also holds output.log
  std::chrono::seconds idle_limit;
};

// Throws std::runtime_error when the job cannot be started.
JobEnd run_job(const JobSpec& spec);

// This program's own path (/proc/self/exe).
std::string self_executable();
// strata-run beside this program (the build tree and an install put them in one folder), else
// the one on PATH; throws std::runtime_error when there is none.
std::string find_launcher();

}  // namespace strata::plugin_check
