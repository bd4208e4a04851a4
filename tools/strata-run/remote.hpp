// Starting a rank on another host: the launch agent's argv and the POSIX shell command it runs
// there. Pure string building, unit-tested.
//
// The secret never appears here: strata-run writes it as the first line of the agent's stdin and
// the command reads it with `IFS= read -r`. The rest of stdin stays open for the rank's lifetime;
// a watcher in the command kills the program when it reaches EOF, so whatever ends strata-run or
// the agent (a failure elsewhere, Ctrl-C, a dropped ssh connection) also ends the remote rank.
#pragma once

#include "environment.hpp"

#include <string>
#include <vector>

namespace strata::run {

// The first stdout line of the remote command; strata-run consumes it. Seeing it means the agent
// reached the host and the shell there is running.
inline constexpr const char* kStartedMarker = "strata-run:started";

// The default agent: ssh that never prompts and gives up after connect_timeout seconds.
std::string default_launch_agent(int connect_timeout);

// 'text' for a POSIX shell, with ' written as '\''.
std::string shell_quote(const std::string& text);

// sh -c '...': cd to `cwd`, read the secret from stdin, export `env` (which must not hold the
// secret), print the marker, run `program` in the background and wait for it while a watcher
// kills it at stdin EOF (SIGTERM, then SIGKILL after 3 s), then exit with the program's status.
std::string remote_command(const std::string& cwd, const EnvVars& env,
                           const std::vector<std::string>& program);

// The agent string split on blanks (like mpirun's plm_rsh_agent), then HOST, then the command
// (after "sh -c" when the agent is srun, which runs an argv rather than a shell's command line).
std::vector<std::string> agent_argv(const std::string& agent, const std::string& host,
                                    const std::string& command);

}  // namespace strata::run
