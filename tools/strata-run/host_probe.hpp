// Whether a host still answers, asked before a restart: a rank's failure can be the consequence of
// a host that dropped off the network (every rank then reports its peers gone), and only the launch
// agent can tell which host it was.
#pragma once

#include <optional>
#include <string>

namespace strata::run {

// Runs `AGENT HOST true` (stdin /dev/null) for at most `timeout_s` seconds. Nothing when it exits 0;
// else why not: the agent's last stderr line, its exit code, or "no answer within N s".
std::optional<std::string> host_unreachable(const std::string& agent, const std::string& host, int timeout_s);

}  // namespace strata::run
