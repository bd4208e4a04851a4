// The per-job secret (STRATA_JOB_SECRET): 32 random bytes from getrandom as 64 lower-case hex
// digits. Ranks use it to authenticate each other's connections. It travels only through
// environments and pipes, never on a command line, where any user could read it in /proc.
#pragma once

#include <string>

namespace strata::run {

std::string make_job_secret();

}  // namespace strata::run
