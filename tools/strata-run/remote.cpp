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
  std::string run;
  for (const std::string& word : program) run += shell_quote(word) + " ";
  run += "</dev/null 3<&- & pid=$!; ";
  // With setsid the program leads its own process group (a background child of a shell without
  // job control is never a group leader, so setsid execs without forking and $! is the group), and
  // the watcher ends everything it started, not just its first process. Without setsid: the
  // process alone.
  script += "if command -v setsid >/dev/null 2>&1; then setsid " + run + "group=-$pid; else " + run +
            "group=$pid; fi; ";
  // The watcher holds only stdin (its output goes to /dev/null), so it never keeps an ssh session
  // open after the program has ended.
  script += "(cat <&3 >/dev/null; kill -TERM $group; sleep 3; kill -KILL $group) >/dev/null 2>&1 & "
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
  // ssh hands its command to the remote login shell; srun runs an argv, so a shell is named.
  const std::string& program = argv.front();
  if (program == "srun" || (program.size() > 5 && program.ends_with("/srun"))) {
    argv.push_back("sh");
    argv.push_back("-c");
  }
  argv.push_back(command);
  return argv;
}

}  // namespace strata::run
