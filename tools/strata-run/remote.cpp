#include "remote.hpp"

#include <sstream>

namespace strata::run {

std::string default_launch_agent(int connect_timeout) {
  return "ssh -o BatchMode=yes -o ConnectTimeout=" + std::to_string(connect_timeout);
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string remote_command(const std::string& cwd, const EnvVars& env,
                           const std::vector<std::string>& program) {
  std::string script = "cd " + shell_quote(cwd) + " || exit 1; ";
  // The secret is the first stdin line; an agent that closed stdin early leaves nothing to run.
  script += "IFS= read -r STRATA_JOB_SECRET || exit 1; export STRATA_JOB_SECRET; ";
  for (const auto& [name, value] : env) script += "export " + name + "=" + shell_quote(value) + "; ";
  script += "echo " + std::string(kStartedMarker) + "; ";
  // A background job of a non-interactive sh gets /dev/null as stdin, so the watcher reads the
  // agent's stdin through fd 3; the program gets neither.
  script += "exec 3<&0; ";
  for (const std::string& word : program) script += shell_quote(word) + " ";
  script += "</dev/null 3<&- & pid=$!; ";
  // The watcher holds only stdin (its output goes to /dev/null), so it never keeps an ssh session
  // open after the program has ended.
  script += "(cat <&3 >/dev/null; kill -TERM $pid; sleep 3; kill -KILL $pid) >/dev/null 2>&1 & "
            "watcher=$!; exec 3<&-; ";
  script += "wait $pid; rc=$?; kill $watcher 2>/dev/null; exit $rc";
  // Wrapped in sh -c so that a remote login shell that is not POSIX (csh, fish) still runs it.
  return "sh -c " + shell_quote(script);
}

std::vector<std::string> agent_argv(const std::string& agent, const std::string& host,
                                    const std::string& command) {
  std::vector<std::string> argv;
  std::istringstream words(agent);
  std::string word;
  while (words >> word) argv.push_back(word);
  argv.push_back(host);
  argv.push_back(command);
  return argv;
}

}  // namespace strata::run
