// Merges the result files of one worker job (file_recorder.hpp's format, one file per rank) into
// one verdict per check: a check fails if it failed on any rank, did not finish on one, or ran
// on some ranks only; otherwise it cannot run here if any rank could not run the plugin; it is
// skipped only if every rank skipped it.
#pragma once

#include "check.hpp"

#include <string>
#include <vector>

namespace strata::plugin_check {

struct CheckResult {
  std::string name;  // full: "comm.np2.allreduce.f32.sum"
  Outcome outcome = Outcome::Pass;
  std::string detail;
};

// How the job's processes ended (worker_jobs.hpp).
struct JobEnd {
  int exit_code = 0;        // 128+N for signal N
  bool timed_out = false;   // the parent killed it
  std::string output_tail;  // last lines of its combined output, for failures nobody recorded
};

// `prefix` is prepended to every name ("comm.np2."); `ranks` is the job's size. Reads
// <dir>/rank-<R>.txt for R in [0, ranks).
std::vector<CheckResult> merge_job(const std::string& dir, int ranks, const std::string& prefix,
                                   const JobEnd& end);

}  // namespace strata::plugin_check
