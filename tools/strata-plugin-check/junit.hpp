// The JUnit XML report (--junit): one <testcase> per check, classname = the name up to its last
// dot's stratum and world size ("comm.np2"), as CI systems (Jenkins, GitLab) read it.
#pragma once

#include "job_results.hpp"

#include <string>
#include <vector>

namespace strata::plugin_check {

// Writes the report to `path` through a temporary file renamed into place, so a reader never
// sees half a report. Throws std::runtime_error naming the path when it cannot.
void write_junit(const std::string& path, const std::string& library,
                 const std::vector<CheckResult>& results);

}  // namespace strata::plugin_check
